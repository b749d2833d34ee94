import { CustomerListCache, type ListAnchor } from '../../src/modules/customers/customer-list-cache.js';

const count = (version: string, total: number) => ({ version, total, density: 1, ids: null });
const anchor = (position: number): ListAnchor => ({
  position,
  createdAt: `t${position}`,
  id: `cus_${position}`,
});

describe('CustomerListCache', () => {
  it('keys a filter apart from the unfiltered list of the same app', () => {
    expect(CustomerListCache.key('app_1', null)).not.toBe(CustomerListCache.key('app_1', '%%'));
    expect(CustomerListCache.key('app_1', '%a%')).not.toBe(CustomerListCache.key('app_2', '%a%'));
  });

  it('merges anchors of the same version and starts over for another version', () => {
    const cache = new CustomerListCache();
    cache.store('k', count('7', 100), [anchor(30), anchor(10)]);
    cache.store('k', count('7', 100), [anchor(20), anchor(10)]);
    expect(cache.get('k')?.anchors.map((a) => a.position)).toEqual([10, 20, 30]);
    cache.store('k', count('8', 101), [anchor(40)]);
    expect(cache.get('k')).toEqual({ ...count('8', 101), anchors: [anchor(40)] });
  });

  it('forgets the least recently used entry beyond its capacity', () => {
    const cache = new CustomerListCache(2);
    cache.store('a', count('1', 1), []);
    cache.store('b', count('1', 2), []);
    cache.get('a');
    cache.store('c', count('1', 3), []);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')?.total).toBe(1);
    expect(cache.get('c')?.total).toBe(3);
    expect(cache.size).toBe(2);
  });

  it('shows one count under way per key until it settles, failed or not', async () => {
    const cache = new CustomerListCache();
    let release!: (n: number) => void;
    const led = cache.lead('k', () => new Promise<number>((resolve) => (release = resolve)));
    expect(cache.inFlight('k')).toBeDefined();
    expect(cache.inFlight('other')).toBeUndefined();
    release(42);
    await expect(led).resolves.toBe(42);
    expect(cache.inFlight('k')).toBeUndefined();
    await expect(cache.lead('k', () => Promise.reject(new Error('timeout')))).rejects.toThrow('timeout');
    expect(cache.inFlight('k')).toBeUndefined();
  });
});
