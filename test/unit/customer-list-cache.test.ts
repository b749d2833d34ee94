import {
  CustomerListCache,
  type ListAnchor,
  type ListRow,
} from '../../src/modules/customers/customer-list-cache.js';
import type { CustomerRowsNotice, NoticeRow } from '../../src/modules/customers/customer-rows-notice.js';

const count = (version: string, total: number, rows: ListRow[] | null = null) => ({
  version,
  total,
  density: 1,
  rows,
});
/** The row at `position` of a list whose rows are one second apart, newest (position 0) at 1 000 s. */
const at = (position: number) => (1_000 - position) * 1_000_000;
const anchor = (position: number): ListAnchor => ({
  position,
  createdAt: `t${position}`,
  at: at(position),
  id: `cus_${position}`,
});
const row = (id: string, micros: number, email = `${id}@match.example`): NoticeRow => [id, micros, email];
const notice = (shard: number, v: number, ins: NoticeRow[], del: NoticeRow[] = []): string =>
  JSON.stringify({ app: 'app_1', shard, v, ins, del } satisfies CustomerRowsNotice);

describe('CustomerListCache', () => {
  it('keys a filter apart from the unfiltered list of the same app', () => {
    expect(CustomerListCache.key('app_1', null)).not.toBe(CustomerListCache.key('app_1', ''));
    expect(CustomerListCache.key('app_1', 'a')).not.toBe(CustomerListCache.key('app_2', 'a'));
  });

  it('merges anchors of the same versions and starts over for other versions', () => {
    const cache = new CustomerListCache();
    cache.store('k', 'app_1', null, count('0:7', 100), [anchor(30), anchor(10)]);
    cache.store('k', 'app_1', null, count('0:7', 100), [anchor(20), anchor(10)]);
    expect(cache.get('k')?.anchors.map((a) => a.position)).toEqual([10, 20, 30]);
    cache.store('k', 'app_1', null, count('0:8', 101), [anchor(40)]);
    expect(cache.get('k')).toEqual({ ...count('0:8', 101), anchors: [anchor(40)] });
  });

  it('forgets the least recently used entry beyond its capacity', () => {
    const cache = new CustomerListCache(2);
    cache.store('a', 'app_1', null, count('0:1', 1), []);
    cache.store('b', 'app_1', 'b', count('0:1', 2), []);
    cache.get('a');
    cache.store('c', 'app_1', 'c', count('0:1', 3), []);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')?.total).toBe(1);
    expect(cache.get('c')?.total).toBe(3);
    expect(cache.size).toBe(2);
  });

  it('adjusts a total and the positions after a matching row by the next version of a shard', () => {
    const cache = new CustomerListCache();
    cache.store('k', 'app_1', 'match', count('0:7,3:2', 100), [anchor(10), anchor(50)]);
    // Newer than both anchors, between them, older than both; and one that does not match.
    cache.notice(notice(3, 3, [row('cus_new', at(-1)), row('cus_mid', at(30) + 1), row('cus_old', at(99))]));
    cache.notice(notice(0, 8, [row('cus_other', at(-2), 'x@other.example')]));
    expect(cache.get('k')).toEqual({
      ...count('0:8,3:3', 103),
      anchors: [anchor(10), anchor(50)].map((a, i) => ({ ...a, position: a.position + 1 + i })),
    });
    // A delete of an anchored row drops that anchor and moves the older one back.
    cache.notice(notice(5, 1, [], [row('cus_10', at(10))]));
    expect(cache.get('k')?.version).toBe('0:8,3:3,5:1');
    expect(cache.get('k')?.total).toBe(102);
    expect(cache.get('k')?.anchors.map((a) => [a.id, a.position])).toEqual([['cus_50', 51]]);
  });

  it('skips a notice it holds already and forgets the list after a missed one', () => {
    const cache = new CustomerListCache();
    cache.store('k', 'app_1', null, count('0:7', 100), []);
    cache.notice(notice(0, 7, [row('cus_seen', at(0))]));
    expect(cache.get('k')?.total).toBe(100);
    cache.notice(notice(0, 9, [row('cus_after_a_gap', at(0))]));
    expect(cache.get('k')).toBeUndefined();
  });

  it('forgets a list when a notice carries no rows or ties a remembered row on created_at', () => {
    const cache = new CustomerListCache();
    cache.store('bulk', 'app_1', null, count('0:7', 100), []);
    cache.store('tie', 'app_1', 'match', count('0:7', 100), [anchor(10)]);
    cache.notice(JSON.stringify({ app: 'app_1', shard: 0, v: 8 }));
    expect(cache.get('bulk')).toBeUndefined();
    expect(cache.get('tie')).toBeUndefined();
    cache.store('tie', 'app_1', 'match', count('0:8', 100), [anchor(10)]);
    cache.notice(notice(0, 9, [row('cus_10b', at(10))]));
    expect(cache.get('tie')).toBeUndefined();
  });

  it('keeps a short list in order and turns it into a longer one past 100 rows', () => {
    const cache = new CustomerListCache();
    const rows = Array.from({ length: 99 }, (_, i) => ({ id: `cus_${i}`, at: at(i * 2) }));
    cache.store('k', 'app_1', 'match', count('0:1', 99, rows), []);
    cache.notice(notice(0, 2, [row('cus_between', at(3))], [row('cus_0', at(0))]));
    expect(
      cache
        .get('k')
        ?.rows?.slice(0, 3)
        .map((r) => r.id),
    ).toEqual(['cus_1', 'cus_between', 'cus_2']);
    expect(cache.get('k')?.total).toBe(99);
    cache.notice(notice(0, 3, [row('cus_a', at(-1)), row('cus_b', at(-2))]));
    expect(cache.get('k')?.rows).toBeNull();
    expect(cache.get('k')?.total).toBe(101);
  });

  it('brings a count up to date with the notices that arrived while it ran', () => {
    const cache = new CustomerListCache();
    cache.notice(notice(0, 7, [row('cus_counted', at(0))]));
    cache.notice(notice(0, 8, [row('cus_later', at(0))]));
    cache.store('k', 'app_1', null, count('0:7', 100), []);
    expect(cache.get('k')).toMatchObject({ version: '0:8', total: 101 });
  });

  it('undoes the notices applied since an earlier version, and only those', () => {
    const cache = new CustomerListCache();
    const rows = [0, 2, 4].map((p) => ({ id: `cus_${p}`, at: at(p) }));
    cache.store('short', 'app_1', 'match', count('0:7', 3, rows), []);
    cache.store('long', 'app_1', null, count('0:7', 500), [anchor(10)]);
    cache.notice(notice(0, 8, [row('cus_new', at(-1))], [row('cus_2', at(2))]));
    cache.notice(notice(4, 1, [row('cus_other', at(-2), 'x@other.example')]));
    cache.store('long', 'app_1', null, count('0:8,4:1', 501), [anchor(30)]);
    expect(cache.get('long')?.anchors.map((a) => [a.id, a.position])).toEqual([
      ['cus_10', 11],
      ['cus_30', 30],
    ]);
    expect(cache.at('short', '0:8')).toMatchObject({ version: '0:8', total: 3 });
    expect(cache.at('short', '0:7')).toEqual({ ...count('0:7', 3, rows), anchors: [] });
    expect(cache.at('long', '0:7')).toMatchObject({ version: '0:7', total: 500 });
    expect(cache.at('long', '0:7')?.anchors.map((a) => [a.id, a.position])).toEqual([
      ['cus_10', 10],
      ['cus_30', 29],
    ]);
    // Versions it never held: another shard's, a mix of some, ahead of it.
    expect(cache.at('short', '0:7,4:1,5:1')).toBeUndefined();
    expect(cache.at('short', '0:9,4:1')).toBeUndefined();
    expect(cache.get('short')?.version).toBe('0:8,4:1');
  });

  it('keeps the newest rows of the unfiltered list in order through inserts and deletions', () => {
    const cache = new CustomerListCache();
    const head = [0, 1, 2].map((p) => ({ id: `cus_${p}`, at: at(p) }));
    cache.store('k', 'app_1', null, { ...count('0:1', 500), head }, []);
    // A new customer goes first; one created long ago goes after the head (only the total sees it).
    cache.notice(notice(0, 2, [row('cus_new', at(-1)), row('cus_early', at(400))]));
    expect(cache.get('k')?.head?.map((r) => r.id)).toEqual(['cus_new', 'cus_0', 'cus_1', 'cus_2']);
    expect(cache.get('k')?.total).toBe(502);
    // A row of the head goes with its deletion; one older than the head changes only the total.
    cache.notice(notice(0, 3, [], [row('cus_1', at(1)), row('cus_300', at(300))]));
    expect(cache.get('k')?.head?.map((r) => r.id)).toEqual(['cus_new', 'cus_0', 'cus_2']);
    expect(cache.get('k')?.total).toBe(500);
    // A deleted row newer than the head's oldest that the head does not hold: it was not what it says.
    cache.notice(notice(0, 4, [], [row('cus_ghost', at(0) - 1)]));
    expect(cache.get('k')).toBeUndefined();
  });

  it('grows a head that holds the whole list with a row older than all of it, and forgets one at a tie', () => {
    const cache = new CustomerListCache();
    const head = [0, 1].map((p) => ({ id: `cus_${p}`, at: at(p) }));
    cache.store('k', 'app_1', null, { ...count('0:1', 2), head }, []);
    cache.notice(notice(0, 2, [row('cus_early', at(400))]));
    expect(cache.get('k')?.head?.map((r) => r.id)).toEqual(['cus_0', 'cus_1', 'cus_early']);
    // Same created_at as a row of the head, another id: their order is the database's.
    cache.notice(notice(0, 3, [row('cus_twin', at(1))]));
    expect(cache.get('k')).toBeUndefined();
  });

  it('forgets everything on reset', () => {
    const cache = new CustomerListCache();
    cache.store('k', 'app_1', null, count('0:7', 100), []);
    cache.reset();
    expect(cache.get('k')).toBeUndefined();
    cache.notice('not json');
    expect(cache.size).toBe(0);
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
