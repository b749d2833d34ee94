import pg from 'pg';
import { CHANGES_CHANNEL, type Change, ChangeFeed, FeedCache } from '../../src/infra/change-feed.js';
import { createLogger } from '../../src/infra/logger.js';

/**
 * The change feed and its cache on the real test database: notices are sent with pg_notify exactly as
 * the row triggers send them.
 */
const url = process.env.TEST_DATABASE_URL!;
const logger = createLogger('silent');
let feed: ChangeFeed;
let sender: pg.Client;

beforeEach(async () => {
  feed = new ChangeFeed(url, logger);
  sender = new pg.Client({ connectionString: url });
  await sender.connect();
});
afterEach(async () => {
  await feed.close();
  await sender.end();
});

const notify = (payload: unknown) =>
  sender.query('select pg_notify($1, $2)', [
    CHANGES_CHANNEL,
    typeof payload === 'string' ? payload : JSON.stringify(payload),
  ]);

const byApp = (change: Change) => (change.t === 'plan' ? [`app:${change.app}`] : []);

/** A loader that counts its calls and answers `key#count`. */
function counting() {
  const calls = new Map<string, number>();
  return {
    load: (key: string) => async () => {
      const n = (calls.get(key) ?? 0) + 1;
      calls.set(key, n);
      return `${key}#${n}`;
    },
    calls: (key: string) => calls.get(key) ?? 0,
  };
}

/**
 * A loader answering `value#n` for its n-th call, whose first call sends `notices` (committed while that
 * load is under way) and waits until they have arrived.
 */
function loadingWhile(...notices: unknown[]) {
  let loads = 0;
  const load = async () => {
    loads++;
    if (loads === 1) {
      for (const notice of notices) await notify(notice);
      await feed.synced();
    }
    return `value#${loads}`;
  };
  return { load, loads: () => loads };
}

describe('FeedCache', () => {
  it('serves from memory until a committed change names the entry, and drops only what it names', async () => {
    const cache = new FeedCache<string>(feed, byApp);
    const loader = counting();
    const get = (key: string, app: string) => cache.get(key, loader.load(key), () => [`app:${app}`]);

    expect(await get('a1', 'A')).toBe('a1#1');
    expect(await get('b1', 'B')).toBe('b1#1');
    expect(await get('a1', 'A')).toBe('a1#1');
    expect(feed.listening).toBe(true);

    await notify({ t: 'plan', app: 'A' });
    // No wait: the read itself makes sure the notice has arrived.
    expect(await get('a1', 'A')).toBe('a1#2');
    expect(await get('b1', 'B')).toBe('b1#1');
  });

  it('does not keep a value loaded while a change naming it arrived', async () => {
    const cache = new FeedCache<string>(feed, byApp);
    // The change commits while the first load is under way: its result must not be cached.
    const racing = loadingWhile({ t: 'plan', app: 'A' }).load;
    expect(await cache.get('k', racing, () => ['app:A'])).toBe('value#1');
    expect(await cache.get('k', racing, () => ['app:A'])).toBe('value#2');
    expect(await cache.get('k', racing, () => ['app:A'])).toBe('value#2');
  });

  it('keeps a value loaded while changes naming other entries arrived', async () => {
    const cache = new FeedCache<string>(feed, byApp);
    // Another app's plan changes while the first load is under way, and a change this cache ignores.
    const racing = loadingWhile({ t: 'plan', app: 'B' }, { t: 'subscription', app: 'A' });
    expect(await cache.get('k', racing.load, () => ['app:A'])).toBe('value#1');
    expect(await cache.get('k', racing.load, () => ['app:A'])).toBe('value#1');
    expect(racing.loads()).toBe(1);
  });

  it('keeps a value read by a statement unless a change naming it overtook the statement (storeRead)', async () => {
    const cache = new FeedCache<string>(feed, byApp);
    const loader = counting();
    expect(await feed.synced()).toBe(true);
    const since = feed.version;
    await notify({ t: 'plan', app: 'B' });
    await feed.synced();
    cache.storeRead('b', 'b#read', ['app:B'], since);
    cache.storeRead('a', 'a#read', ['app:A'], since);
    expect(await cache.get('b', loader.load('b'), () => ['app:B'])).toBe('b#1');
    expect(await cache.get('a', loader.load('a'), () => ['app:A'])).toBe('a#read');
  });

  it('does not keep a value loaded while an unreadable notice arrived', async () => {
    const cache = new FeedCache<string>(feed, byApp);
    // Notices may have been missed: nothing read meanwhile can be trusted, whatever it holds.
    const racing = loadingWhile('not json').load;
    expect(await cache.get('k', racing, () => ['app:A'])).toBe('value#1');
    expect(await cache.get('k', racing, () => ['app:A'])).toBe('value#2');
    expect(await cache.get('k', racing, () => ['app:A'])).toBe('value#2');
  });

  it('keeps only what `keep` accepts', async () => {
    const cache = new FeedCache<string | undefined>(feed, byApp);
    let loads = 0;
    const missing = async () => {
      loads++;
      return undefined;
    };
    await cache.get(
      'unknown',
      missing,
      () => [],
      (v) => v !== undefined,
    );
    await cache.get(
      'unknown',
      missing,
      () => [],
      (v) => v !== undefined,
    );
    expect(loads).toBe(2);
  });

  it('holds at most maxEntries, dropping the oldest', async () => {
    const cache = new FeedCache<string>(feed, byApp, 3);
    const loader = counting();
    for (const key of ['k1', 'k2', 'k3', 'k4']) await cache.get(key, loader.load(key), () => []);
    await cache.get('k4', loader.load('k4'), () => []);
    await cache.get('k2', loader.load('k2'), () => []);
    expect(loader.calls('k4')).toBe(1);
    expect(loader.calls('k2')).toBe(1);
    await cache.get('k1', loader.load('k1'), () => []);
    expect(loader.calls('k1')).toBe(2);
  });

  it('forgets everything on a notice it cannot read', async () => {
    const cache = new FeedCache<string>(feed, byApp);
    const loader = counting();
    await cache.get('k', loader.load('k'), () => ['app:A']);
    await notify('not json');
    await cache.get('k', loader.load('k'), () => ['app:A']);
    expect(loader.calls('k')).toBe(2);
  });

  it('reads the database every time when it cannot listen', async () => {
    const unreachable = new URL(url);
    unreachable.port = '1';
    const deaf = new ChangeFeed(unreachable.toString(), logger);
    const cache = new FeedCache<string>(deaf, byApp);
    const loader = counting();
    await cache.get('k', loader.load('k'), () => []);
    await cache.get('k', loader.load('k'), () => []);
    expect(loader.calls('k')).toBe(2);
    expect(deaf.listening).toBe(false);
    await deaf.close();
  });
});
