import { isDeepStrictEqual } from 'node:util';
import type { EntityDictionary } from '@mikro-orm/core';
import { IsolationLevel, LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { Page } from '../../core/pagination.js';
import {
  type AppScope,
  type Principal,
  requireApiKey,
  requireApiKeyConfirmedInStatement,
  revokedApiKey,
} from '../../core/principal.js';
import { noteCustomer } from '../../core/subjects.js';
import { parseInput } from '../../core/validation.js';
import { type ChangeFeed, customerChangeTags, customerTag, FeedCache } from '../../infra/change-feed.js';
import { actingOnApp } from '../apps/app-rules.js';
import { auditEventColumns } from '../audit/audit-record.js';
import type { OutboundEvents } from '../webhooks/outbound-events.js';
import { Customer } from './customer.entity.js';
import {
  type CustomerFields,
  type CustomerJson,
  type CustomerListJson,
  customerFieldsOf,
  presentCustomer,
  presentCustomerList,
} from './customer.presenter.js';
import { CustomerListCache, HEAD_ROWS, type ListAnchor, type ListSnapshot } from './customer-list-cache.js';
import { CUSTOMER_ROWS_CHANNEL } from './customer-rows-notice.js';
import {
  COUNT_SQL,
  CREATE_CUSTOMER,
  type CustomerRow,
  micros,
  NEWEST_CUSTOMERS,
  NEWEST_CUSTOMERS_AND_HEAD,
  OLDEST_CUSTOMERS,
  READ_CUSTOMER,
  SHARD_VERSIONS,
} from './customer-statements.js';
import {
  assertMetadataLimits,
  createCustomerSchema,
  listCustomersSchema,
  mergeMetadata,
  updateCustomerSchema,
} from './customers.schemas.js';

/**
 * Up to this offset the unfiltered page is found from the newest end in one statement (an index-only
 * walk of at most this many entries, a few milliseconds) with the total kept by the database, and as
 * near the oldest end (by the total last remembered) from that end; between them, through the
 * remembered positions (see CustomerListCache).
 */
const NEAR_OFFSET = 10_000;

/**
 * A walk through the list remembers the position of every ANCHOR_STEP-th row it passes, or of fewer in
 * a list so long that LIST_ANCHORS of them would not cover it (so a list keeps a few hundred anchors at
 * most, and a walk from the nearest one passes at most half a step).
 */
const ANCHOR_STEP = 10_000;
const LIST_ANCHORS = 200;

/**
 * A filter matching at most this many customers has all their ids remembered: any page of it is then
 * read by primary key, instead of through the trigram index on every request.
 */
const SHORT_LIST = 100;

/**
 * A filtered walk expected to pass at most this many index entries (its rows ÷ the filter's share of
 * the app) goes through the list-order index, without sorting: a few milliseconds, where the planner,
 * which does not know the share, may prefer fetching and sorting every trigram candidate (10 000 rows
 * for a 1 % fragment of a million).
 */
const ORDERED_WALK = 100_000;

/** The app's write versions (see SHARD_VERSIONS), as one value. */
const SHARDS_SQL = `(select ${SHARD_VERSIONS} from customer_count where app_id = ?)`;

/**
 * How to reach a page: walk from an end of the list or from a remembered row, in one direction, passing
 * `skip` rows and returning the next `take`. `older` walks newest first from `from` (included) or from
 * the newest end; `newer` walks oldest first from the row after `from` or from the oldest end. `start`
 * is the list position of the walk's first row.
 */
interface Walk {
  readonly direction: 'older' | 'newer';
  /** Every step-th row passed is returned as an anchor. */
  readonly step: number;
  readonly from: ListAnchor | null;
  readonly start: number;
  readonly skip: number;
  readonly take: number;
}

/** The shortest walk to the page at `offset` of a list of `total` rows, given the remembered rows. */
function planWalk(total: number, anchors: readonly ListAnchor[], offset: number, limit: number): Walk {
  const take = Math.max(0, Math.min(limit, total - offset));
  const step = Math.max(ANCHOR_STEP, Math.ceil(total / LIST_ANCHORS));
  if (take === 0) return { direction: 'older', step, from: null, start: 0, skip: 0, take: 0 };
  let best: Walk = { direction: 'older', step, from: null, start: 0, skip: offset, take };
  const consider = (walk: Walk) => {
    if (walk.skip < best.skip) best = walk;
  };
  consider({ direction: 'newer', step, from: null, start: total - 1, skip: total - offset - take, take });
  for (const anchor of anchors) {
    if (anchor.position <= offset) {
      consider({
        direction: 'older',
        step,
        from: anchor,
        start: anchor.position,
        skip: offset - anchor.position,
        take,
      });
    } else if (anchor.position >= offset + take) {
      consider({
        direction: 'newer',
        step,
        from: anchor,
        start: anchor.position - 1,
        skip: anchor.position - offset - take,
        take,
      });
    }
  }
  return best;
}

/** Whether `walk` should go in list order: it passes few enough index entries at this density. */
function isShortWalk(walk: Walk, density: number): boolean {
  return density > 0 && (walk.skip + walk.take) / density <= ORDERED_WALK;
}

/** What one walk read: the version of its snapshot, the page (newest first) and the rows it passed. */
interface WalkResult {
  readonly version: string;
  readonly data: CustomerFields[];
  readonly anchors: ListAnchor[];
}

type WalkRow = Record<string, unknown> & {
  version: string;
  kind: 'hop' | 'page' | null;
  n: string | number | null;
  anchor_at: string | null;
  anchor_us: string | null;
  anchor_id: string | null;
};

/** PostgreSQL's SQLSTATE for a unique violation. */
const UNIQUE_VIOLATION = '23505';

/** The API key a statement confirms: the caller's, or none for the operator acting on an app. */
function keyToConfirm(principal: Principal): string | null {
  return principal.kind === 'apiKey' ? principal.apiKeyId : null;
}

/**
 * A list whose share of raced reads (a moving average, each read weighing RACED_WEIGHT) is at least
 * RACED_SHARE goes straight to the snapshot (`listRemembered`); each time, the share decays by
 * RACED_DECAY. At most RACED_LISTS lists are followed.
 */
const RACED_SHARE = 0.5;
const RACED_WEIGHT = 0.1;
const RACED_DECAY = 0.97;
const RACED_LISTS = 1_000;

/** Customers a CustomersService remembers by id (see `rememberable` for their size). */
const REMEMBERED_CUSTOMERS = 5_000;

/** Metadata longer than this (as JSON) is read from the database each time: 5 000 rows stay near 12 MB. */
const REMEMBERED_METADATA_LENGTH = 2_048;

/**
 * Whether to remember a customer shown: found, with small metadata. It is frozen then, as every later
 * reader shares it: a change in place would be a bug, and throws.
 */
function rememberable(shown: CustomerJson | undefined): boolean {
  if (shown === undefined || JSON.stringify(shown.metadata).length > REMEMBERED_METADATA_LENGTH) return false;
  deepFreeze(shown);
  return true;
}

function deepFreeze(value: unknown): void {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const inner of Object.values(value)) deepFreeze(inner);
}

/** Longer ids cannot exist (ids are `cus_` + 32 characters); answering 404 at once spares a query. */
const MAX_ID_LENGTH = 100;

/** `%`, `_` and the escape character itself are literal in the e-mail filter. */
function likeFragment(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * Customers of an app, as the `/v1/customers` endpoints and GraphQL use them. Only an API key of the
 * customer's app may call these (a session token → 403); another app's customer is reported as absent.
 */
export class CustomersService {
  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
    private readonly events: OutboundEvents,
    private readonly changes: ChangeFeed,
  ) {
    changes.listenChannel(CUSTOMER_ROWS_CHANNEL, (payload) => this.lists.notice(payload));
    changes.listen({ changed: () => undefined, reset: () => this.lists.reset() });
    this.#shown = new FeedCache(changes, customerChangeTags, REMEMBERED_CUSTOMERS);
  }

  /**
   * Totals and list positions, per app and filter, each valid for the shard versions it holds and
   * adjusted by the notices of the app's writes.
   */
  private readonly lists = new CustomerListCache();

  /** Per list, the share of its recent reads that raced a write (see `listRemembered`); bounded. */
  readonly #raced = new Map<string, number>();

  /**
   * Customers shown by id, per app (`app|id`), as the interface shows them: a read that finds one here
   * answers from memory after the change feed's barrier. Any change of a customer's row (and its
   * deletion) is announced and drops it on every instance; a customer not found is never kept
   * (creations are not announced).
   */
  readonly #shown: FeedCache<CustomerJson | undefined>;

  private get em() {
    return this.orm.em;
  }

  /**
   * Newest first; `email` is a case-insensitive substring filter; `total` counts every match. The
   * operator names the app (`scope`); an API key lists its own. The total and the page always come from
   * one snapshot, so they agree even while customers are created or deleted.
   *
   * Without a filter the total is the app's count kept by the database (customer_count), a sum of a few
   * rows, and a page up to NEAR_OFFSET is one index-only statement. A filtered total has to be counted
   * (linear in the app's matches), and a deep page walked (linear in the offset): both are remembered
   * with the app's shard versions, adjusted by every write's notice, and reused while they are the
   * snapshot's (see `listRemembered`).
   */
  async listCustomers(principal: Principal, input: unknown, scope?: AppScope): Promise<Page<CustomerFields>> {
    const { appId } = requireApiKey(await actingOnApp(this.em, principal, scope));
    const { email, limit, offset } = parseInput(listCustomersSchema, input ?? {});
    return this.#list(appId, email, limit, offset);
  }

  /** `listCustomers` once the app and the input are known. */
  #list(
    appId: string,
    email: string | undefined,
    limit: number,
    offset: number,
  ): Promise<Page<CustomerFields>> {
    if (email === undefined || email === '') {
      if (offset <= NEAR_OFFSET) return this.listFromAnEnd(appId, limit, offset);
      // Near the oldest end by the total last remembered: read from that end (exact whatever it is now).
      const remembered = this.lists.get(CustomerListCache.key(appId, null))?.total;
      if (remembered !== undefined && remembered - offset <= NEAR_OFFSET)
        return this.listFromAnEnd(appId, limit, offset, true);
      return this.listRemembered(appId, null, limit, offset);
    }
    return this.listRemembered(appId, email.toLowerCase(), limit, offset);
  }

  /**
   * `GET /v1/customers` as the interface shows it. A page of the unfiltered list within its newest
   * HEAD_ROWS customers is answered from memory when this instance remembers the list's head (its
   * newest ids and total, adjusted by every write's notice) and has shown each of the page's customers
   * since their last change (see `presentCustomerById`): after the request's one change-feed barrier
   * the notices of every write committed before the request have arrived, so both are current. Else one
   * statement reads the page, the total and the head, and both are remembered (concurrent requests for
   * the app wait for it instead of running their own). Any other page is `listCustomers`'.
   */
  async presentCustomerPage(principal: Principal, input: unknown): Promise<CustomerListJson> {
    const { appId } = requireApiKey(await actingOnApp(this.em, principal, undefined));
    const { email, limit, offset } = parseInput(listCustomersSchema, input ?? {});
    if ((email !== undefined && email !== '') || offset + limit > HEAD_ROWS) {
      return presentCustomerList(await this.#list(appId, email, limit, offset));
    }
    // Without the barrier's confirmation nothing remembered is current: the statement answers.
    if (!(await this.changes.synced())) return this.#readHead(appId, limit, offset);
    const remembered = this.#headPage(appId, limit, offset);
    if (remembered) return remembered;
    const headKey = `${CustomerListCache.key(appId, null)}\u0001head`;
    const reading = this.lists.inFlight(headKey);
    if (reading) {
      await reading.catch(() => undefined);
      const read = this.#headPage(appId, limit, offset);
      if (read) return read;
    }
    return this.lists.lead(headKey, () => this.#readHead(appId, limit, offset));
  }

  /** The page from the remembered head and customers, when both hold all of it. */
  #headPage(appId: string, limit: number, offset: number): CustomerListJson | null {
    const known = this.lists.get(CustomerListCache.key(appId, null));
    if (!known?.head) return null;
    const size = Math.max(0, Math.min(limit, known.total - offset));
    const rows = known.head.slice(offset, offset + size);
    if (rows.length !== size) return null;
    const data: CustomerJson[] = [];
    for (const row of rows) {
      const shown = this.#shown.peek(`${appId}|${row.id}`);
      if (shown === undefined) return null;
      data.push(shown);
    }
    for (const shown of data) noteCustomer(shown.id);
    return { data, pagination: { total: known.total, limit, offset } };
  }

  /** One statement: the page, the total and the head, each remembered (see `presentCustomerPage`). */
  async #readHead(appId: string, limit: number, offset: number): Promise<CustomerListJson> {
    const since = this.changes.version;
    const rows = await NEWEST_CUSTOMERS_AND_HEAD.run(this.em, [
      appId,
      appId,
      HEAD_ROWS,
      appId,
      limit,
      offset,
    ]);
    const first = rows[0];
    const total = Number(first?.total ?? 0);
    // Kept only if no notice at all and no reconnection came meanwhile (stricter than `FeedCache`, which
    // looks only for notices naming what it keeps): a head read before a reconnection could lack writes
    // whose notices were lost with the connection.
    if (first && this.changes.unchangedSince(since)) {
      const head = first.head.map(([id, at]) => ({ id, at: Number(at) }));
      this.lists.store(
        CustomerListCache.key(appId, null),
        appId,
        null,
        { version: first.version, total, density: 1, rows: null, head },
        [],
      );
    }
    const data: CustomerJson[] = [];
    for (const { total: _, version: __, head: ___, ...row } of rows) {
      if (row.id === null) continue;
      const shown = presentCustomer(customerFieldsOf(row));
      if (rememberable(shown))
        this.#shown.storeRead(`${appId}|${shown.id}`, shown, [customerTag(shown.id)], since);
      data.push(shown);
    }
    return { data, pagination: { total, limit, offset } };
  }

  /**
   * A page whose total and starting point come from what this instance remembers of the list at the
   * app's current shard versions; otherwise counted and walked once (`countAndList`) and remembered,
   * the others asking for the same list meanwhile waiting for that count instead of running their own.
   *
   * The request's change-feed barrier comes first: once it is back, the notices of every write
   * committed before the request have adjusted what is remembered (CustomerListCache). The remembered
   * versions are checked in the page's own statement (its snapshot), which returns no row when they
   * differ: a remembered total or position is never used for other customers. They differ when a
   * write committed between the barrier and the statement; then the page is read again in one
   * read-only snapshot whose versions are known before its page is read (`readInSnapshot`). Anything
   * else (a write the notices could not describe, a cold filter) is answered at once by the plain
   * count and page, which are remembered.
   */
  private async listRemembered(
    appId: string,
    fragment: string | null,
    limit: number,
    offset: number,
  ): Promise<Page<CustomerFields>> {
    const key = CustomerListCache.key(appId, fragment);
    const synced = await this.changes.synced();
    const known = this.lists.get(key);
    if (known) {
      // A list whose reads mostly race a write (an app written to many times a second) goes to the
      // snapshot at once: the page read first would most likely be thrown away.
      if (!this.#mostlyRaced(key)) {
        const read = await this.readRemembered(null, key, appId, fragment, known, limit, offset);
        this.#noteRace(key, read.page === null);
        if (read.page) return read.page;
      }
      const settled = synced && (await this.readInSnapshot(key, appId, fragment, limit, offset));
      if (settled) return settled;
    }
    const counting = this.lists.inFlight(key);
    if (counting) {
      // Someone is counting this list: its result, adjusted by the notices since, serves this request.
      await counting.catch(() => undefined);
      const counted = this.lists.get(key);
      const read = counted && (await this.readRemembered(null, key, appId, fragment, counted, limit, offset));
      if (read?.page) return read.page;
    }
    return this.lists.lead(key, () => this.countAndList(key, appId, fragment, limit, offset));
  }

  /**
   * Whether most recent reads of the list `key` found a write between their barrier and their page. Each
   * time it says so the share decays a little, so that a read now and then tries again and the share
   * follows the app's writes.
   */
  #mostlyRaced(key: string): boolean {
    const share = this.#raced.get(key);
    if (share === undefined || share < RACED_SHARE) return false;
    this.#raced.set(key, share * RACED_DECAY);
    return true;
  }

  /** Adds the outcome of a read of `key` to its share of raced reads (a moving average). */
  #noteRace(key: string, raced: boolean): void {
    const share = this.#raced.get(key) ?? 0;
    if (!raced && share === 0) return;
    if (this.#raced.size >= RACED_LISTS && !this.#raced.has(key)) this.#raced.clear();
    this.#raced.set(key, share * (1 - RACED_WEIGHT) + (raced ? RACED_WEIGHT : 0));
  }

  /**
   * The page from what is remembered, in one read-only snapshot that holds writes whose notices had not
   * arrived when it began. Its first statement reads the snapshot's versions; unless they are already
   * the remembered ones, after a barrier of its own the notices of every write in the snapshot have
   * arrived, so the list as it was at those versions is what is remembered with the notices since
   * undone (CustomerListCache.at). The second statement reads its page in the same snapshot. Null when
   * the list cannot be had at those versions.
   */
  private readInSnapshot(
    key: string,
    appId: string,
    fragment: string | null,
    limit: number,
    offset: number,
  ): Promise<Page<CustomerFields> | null> {
    const pattern = fragment === null ? null : likeFragment(fragment);
    return this.inPlannedTransaction(pattern, IsolationLevel.REPEATABLE_READ, false, async (em) => {
      const [row] = await em.execute<{ version: string }[]>(`select ${SHARDS_SQL} as version`, [appId]);
      const version = row?.version ?? '';
      if (this.lists.get(key)?.version !== version && !(await this.changes.syncedNow())) return null;
      const then = this.lists.at(key, version);
      if (!then) return null;
      return (await this.readRemembered(em, key, appId, fragment, then, limit, offset)).page;
    });
  }

  /**
   * The page at `offset` from what is remembered, with the versions of the statement's snapshot; no
   * page when they are not `known`'s. In `em`'s transaction when given, else in one of its own (a
   * filtered walk) or none.
   */
  private async readRemembered(
    em: EntityManager | null,
    key: string,
    appId: string,
    fragment: string | null,
    known: ListSnapshot,
    limit: number,
    offset: number,
  ): Promise<{ page: Page<CustomerFields> | null; version: string }> {
    const answer = (version: string, data: CustomerFields[]) => ({
      page: version === known.version ? { data, total: known.total, limit, offset } : null,
      version,
    });
    if (known.rows) {
      const ids = known.rows.slice(offset, offset + limit).map((row) => row.id);
      const read = await this.pageByIds(em ?? this.em, appId, ids, known.version);
      return answer(read.version, read.data);
    }
    const pattern = fragment === null ? null : likeFragment(fragment);
    const walk = planWalk(known.total, known.anchors, offset, limit);
    const ordered = pattern !== null && isShortWalk(walk, known.density);
    const read = em
      ? await (async () => {
          if (pattern !== null)
            await em.execute(`select set_config('enable_sort', ?, true)`, [ordered ? 'off' : 'on']);
          return this.walk(em, appId, pattern, walk, known.version);
        })()
      : await this.inPlannedTransaction(pattern, null, ordered, (tx) =>
          this.walk(tx, appId, pattern, walk, known.version),
        );
    if (read.version === known.version) this.lists.addAnchors(key, known.version, read.anchors);
    return answer(read.version, read.data);
  }

  /**
   * The total (kept or counted), then the page, in one read-only snapshot, remembered with the
   * snapshot's shard versions: a short filtered list whole (its rows), a longer one walked from the
   * nearer end with the anchors the walk passed.
   */
  private countAndList(
    key: string,
    appId: string,
    fragment: string | null,
    limit: number,
    offset: number,
  ): Promise<Page<CustomerFields>> {
    // PostgreSQL's LIKE escape character is `\` by default, so the escaped fragment is matched literally.
    const pattern = fragment === null ? null : likeFragment(fragment);
    return this.inPlannedTransaction(pattern, IsolationLevel.REPEATABLE_READ, false, async (em) => {
      const total =
        pattern === null
          ? COUNT_SQL
          : '(select count(*) from customer where app_id = ? and email_lower like ?)';
      const [row] = await em.execute<{ version: string; total: string; app_total: string }[]>(
        `select ${SHARDS_SQL} as version, ${total} as total, ${COUNT_SQL} as app_total`,
        pattern === null ? [appId, appId, appId] : [appId, appId, pattern, appId],
      );
      const version = row?.version ?? '';
      const counted = Number(row?.total ?? 0);
      const density = counted / Math.max(Number(row?.app_total ?? 0), counted, 1);
      if (pattern !== null && counted <= SHORT_LIST) {
        const rows = await em.execute<(EntityDictionary<Customer> & { list_at: string })[]>(
          `select *, ${micros('created_at')} as list_at from customer where app_id = ? and email_lower like ?
            order by created_at desc, id desc`,
          [appId, pattern],
        );
        const listed = rows.map((r) => ({ id: r.id as string, at: Number(r.list_at) }));
        this.lists.store(key, appId, fragment, { version, total: listed.length, density, rows: listed }, []);
        const data = rows.slice(offset, offset + limit).map(({ list_at: _, ...r }) => customerFieldsOf(r));
        return { data, total: listed.length, limit, offset };
      }
      const walk = planWalk(counted, [], offset, limit);
      if (pattern !== null && isShortWalk(walk, density)) {
        await em.execute(`select set_config('enable_sort', 'off', true)`);
      }
      const read = await this.walk(em, appId, pattern, walk, null);
      this.lists.store(key, appId, fragment, { version, total: counted, density, rows: null }, read.anchors);
      return { data: read.data, total: counted, limit, offset };
    });
  }

  /**
   * `work` in a transaction; with an e-mail filter, under the planner settings the filter's queries are
   * tuned for: a tenant's search reads that tenant's index entries only, never the whole table; and with
   * the app's entries in memory an index page costs about what a table page does, which is what lets the
   * planner prefer the covering index over the trigram bitmap's row rechecks for a common fragment. JIT
   * compilation costs more than it saves on these queries. `ordered`: no sort, so a walk goes in the
   * list-order index (see ORDERED_WALK). Without a filter and isolation, no transaction: the work is one
   * statement.
   */
  private inPlannedTransaction<T>(
    pattern: string | null,
    isolationLevel: IsolationLevel | null,
    ordered: boolean,
    work: (em: EntityManager) => Promise<T>,
  ): Promise<T> {
    if (pattern === null && isolationLevel === null) return work(this.em);
    return this.em.transactional(
      async (em) => {
        if (pattern !== null) {
          await em.execute(
            `select set_config('enable_seqscan', 'off', true), set_config('random_page_cost', '1.1', true),
                    set_config('jit', 'off', true), set_config('enable_sort', ?, true)`,
            [ordered ? 'off' : 'on'],
          );
        }
        return work(em);
      },
      isolationLevel === null ? {} : { isolationLevel, readOnly: true },
    );
  }

  /**
   * One statement: the snapshot's shard versions and, only when they are `expected`, the customers `ids`
   * (a page of a short list remembered whole) in that order.
   */
  private async pageByIds(
    em: EntityManager,
    appId: string,
    ids: readonly string[],
    expected: string,
  ): Promise<{ version: string; data: CustomerFields[] }> {
    const rows = await em.execute<(Record<string, unknown> & { version: string; list_order: unknown })[]>(
      `select v.version, c.*
         from (select ${SHARDS_SQL} as version) as v
         left join lateral (select customer.*, u.list_order
                              from jsonb_array_elements_text(?::jsonb) with ordinality as u(id, list_order)
                              join customer on customer.id = u.id and customer.app_id = ?
                             where v.version = ?) as c on true
        order by c.list_order`,
      [appId, JSON.stringify(ids), appId, expected],
    );
    const data = rows
      .filter((row) => row.id !== null)
      .map(({ version: _, list_order: __, ...row }) => customerFieldsOf(row));
    return { version: rows[0]?.version ?? '', data };
  }

  /**
   * One statement: the snapshot's shard versions and the page `walk` leads to, found index-only (ids
   * and sort keys) then joined to their rows. With `expected`, the walk runs only when the snapshot's
   * versions are `expected` (a one-time filter), as remembered rows belong to those versions alone.
   *
   * A walk passing `walk.step` rows or more goes from anchor to anchor: a recursive step skips to the
   * step-th row after the previous one (`offset` inside the index, as the plain walk would) and
   * each row reached comes back as an anchor, so a first deep walk costs about what a plain offset does
   * and leaves a trail for later ones.
   */
  private async walk(
    em: EntityManager,
    appId: string,
    pattern: string | null,
    walk: Walk,
    expected: string | null,
  ): Promise<WalkResult> {
    const order = walk.direction === 'older' ? 'desc' : 'asc';
    const sort = `order by created_at ${order}, id ${order}`;
    const next = walk.direction === 'older' ? '<' : '>';
    const hops = Math.floor(walk.skip / walk.step);
    const filter = pattern === null ? [] : [pattern];
    const filterSql = pattern === null ? '' : ' and email_lower like ?';
    // The first rows of the walk: from the remembered row (included when walking older, as it is the
    // row at `start`) or from the end; only in a snapshot of the expected version.
    let firstSql = filterSql;
    const firstParams: unknown[] = [...filter];
    if (walk.from !== null) {
      firstSql += ` and (created_at, id) ${walk.direction === 'older' ? '<=' : '>'} (?::timestamptz, ?)`;
      firstParams.push(walk.from.createdAt, walk.from.id);
    }
    if (expected !== null) {
      firstSql += ` and ${SHARDS_SQL} = ?`;
      firstParams.push(appId, expected);
    }
    const params: unknown[] = [];
    let sql: string;
    if (hops === 0) {
      sql = `with page as (
               select p.id, p.created_at, row_number() over (order by p.created_at ${order}, p.id ${order}) as n
                 from (select id, created_at from customer where app_id = ?${firstSql} ${sort} limit ? offset ?) as p),
             hop as (select 0 as n, null::timestamptz as created_at, null::text as id where false)`;
      params.push(appId, ...firstParams, walk.take, walk.skip);
    } else {
      sql = `with recursive hop(n, created_at, id) as (
               (select 1, created_at, id from customer where app_id = ?${firstSql} ${sort} limit 1 offset ${walk.step - 1})
               union all
               (select hop.n + 1, h.created_at, h.id
                  from hop cross join lateral (
                         select created_at, id from customer
                          where app_id = ?${filterSql} and (created_at, id) ${next} (hop.created_at, hop.id)
                          ${sort} limit 1 offset ${walk.step - 1}) as h
                 where hop.n < ?)),
             page as (
               select p.id, p.created_at, row_number() over (order by p.created_at ${order}, p.id ${order}) as n
                 from hop cross join lateral (
                        select id, created_at from customer
                         where app_id = ?${filterSql} and (created_at, id) ${next} (hop.created_at, hop.id)
                         ${sort} limit ? offset ?) as p
                where hop.n = ?)`;
      params.push(appId, ...firstParams, appId, ...filter, hops);
      params.push(appId, ...filter, walk.take, walk.skip - hops * walk.step, hops);
    }
    sql += `
      select v.version, x.kind, x.n, x.created_at::text as anchor_at, ${micros('x.created_at')} as anchor_us,
             x.id as anchor_id, c.*
        from (select ${SHARDS_SQL} as version) as v
        left join lateral (select 'hop' as kind, n, created_at, id from hop
                           union all select 'page', n, created_at, id from page) as x on true
        left join lateral (select * from customer where x.kind = 'page' and customer.id = x.id) as c on true`;
    params.push(appId);
    const rows = await em.execute<WalkRow[]>(sql, params);
    // The walk's k-th row (from 1) is at list position start ± (k − 1).
    const position = (k: number) => (walk.direction === 'older' ? walk.start + k - 1 : walk.start - k + 1);
    const anchors: ListAnchor[] = [];
    const page: { position: number; customer: CustomerFields }[] = [];
    for (const { version: _, kind, n, anchor_at, anchor_us, anchor_id, ...row } of rows) {
      if (kind === 'hop' && anchor_at !== null && anchor_id !== null) {
        anchors.push({
          position: position(Number(n) * walk.step),
          createdAt: anchor_at,
          at: Number(anchor_us),
          id: anchor_id,
        });
      } else if (kind === 'page') {
        page.push({
          position: position(walk.skip + Number(n)),
          customer: customerFieldsOf(row),
        });
      }
    }
    page.sort((x, y) => x.position - y.position);
    return { version: rows[0]?.version ?? '', data: page.map((p) => p.customer), anchors };
  }

  /**
   * One statement: the total kept by the database, and the page's ids found index-only from the newest
   * end (or, `fromOldest`, from the oldest: a page near it) then joined to their rows.
   */
  private async listFromAnEnd(
    appId: string,
    limit: number,
    offset: number,
    fromOldest = false,
  ): Promise<Page<CustomerFields>> {
    const rows = fromOldest
      ? await OLDEST_CUSTOMERS.run(this.em, [appId, appId, limit, offset, limit, offset])
      : await NEWEST_CUSTOMERS.run(this.em, [appId, appId, limit, offset]);
    const data = rows.filter((row) => row.id !== null).map(({ total: _, ...row }) => customerFieldsOf(row));
    return { data, total: Number(rows[0]?.total ?? 0), limit, offset };
  }

  /**
   * Creates a customer; the e-mail must be new to the app regardless of case (else 409). `scope`: the app
   * the operator names (see `actingOnApp`). One statement (CREATE_CUSTOMER): the key's check, the row,
   * its audit event, and its outbound event with the deliveries, which the job queue hears of after it.
   */
  async createCustomer(principal: Principal, input: unknown, scope?: AppScope): Promise<Customer> {
    const { appId } = requireApiKeyConfirmedInStatement(await actingOnApp(this.em, principal, scope));
    const { email, name, metadata } = parseInput(createCustomerSchema, input);
    const initial = mergeMetadata({}, metadata ?? {});
    assertMetadataLimits(initial);
    const now = this.clock.now();
    const id = newId('cus');
    const event = this.events.prepare([
      {
        type: 'customer.created',
        data: {
          id,
          email,
          name: name ?? null,
          metadata: initial,
          paymentCustomerId: null,
          createdAt: now.toISOString(),
          updatedAt: now.toISOString(),
        } satisfies CustomerJson,
        subjects: [id],
      },
    ]);
    // What the audit trail would record of this row on a flush: the fields the caller set.
    const audit = auditEventColumns({
      app: { before: null, after: appId },
      email: { before: null, after: email },
      name: { before: null, after: name ?? null },
      metadata: { before: null, after: initial },
    });
    const key = keyToConfirm(principal);
    let row: Awaited<ReturnType<typeof CREATE_CUSTOMER.run>>[number] | undefined;
    try {
      [row] = await CREATE_CUSTOMER.run(this.em, [
        key,
        key,
        id,
        appId,
        email,
        email.toLowerCase(),
        name ?? null,
        JSON.stringify(initial),
        now,
        event.ids[0],
        event.bodies[0],
        event.subjects[0],
        audit?.id ?? null,
        audit?.actorType ?? null,
        audit?.actorId ?? null,
        audit?.actorEmail ?? null,
        audit?.ip ?? null,
        audit?.userAgent ?? null,
        audit?.changes ?? null,
      ]);
    } catch (error) {
      if ((error as { code?: string }).code === UNIQUE_VIOLATION) {
        // The refusal names the address, so the customer holding it is a subject of this request (a
        // stored idempotent answer of it goes when that customer is erased).
        const holder = await this.em.findOne(
          Customer,
          { app: appId, emailLower: email.toLowerCase() },
          { fields: ['id'] },
        );
        noteCustomer(holder?.id);
        throw new ConflictError(`A customer with e-mail ${email} already exists`);
      }
      throw error;
    }
    if (!row?.key_ok) throw revokedApiKey();
    this.events.announce(row.delivery_ids);
    const { key_ok: _, delivery_ids: __, ...columns } = row;
    return this.em.map(Customer, columns as CustomerRow);
  }

  /**
   * One customer of the caller's app (or of the app the operator names), in one statement that also
   * confirms the caller's API key (READ_CUSTOMER).
   */
  async getCustomer(principal: Principal, id: string, scope?: AppScope): Promise<Customer> {
    const acting = requireApiKeyConfirmedInStatement(await actingOnApp(this.em, principal, scope));
    if (id.length > MAX_ID_LENGTH) throw new NotFoundError('Customer');
    const row = await this.#readCustomer(acting.appId, keyToConfirm(principal), id);
    if (row === undefined) throw new NotFoundError('Customer', id);
    return this.em.map(Customer, row);
  }

  /**
   * `GET /v1/customers/:id`: the customer as the interface shows it. A customer this instance has shown
   * before, and nobody changed since, is answered from memory after the request's one change-feed
   * barrier, which also confirms a key taken without waiting for it (see `confirmsItsApiKey` in
   * src/app.ts); any other read is `getCustomer`'s one statement, and what it finds is remembered.
   */
  async presentCustomerById(principal: Principal, id: string): Promise<CustomerJson> {
    const acting = requireApiKeyConfirmedInStatement(principal);
    if (id.length > MAX_ID_LENGTH) throw new NotFoundError('Customer');
    const cacheKey = `${acting.appId}|${id}`;
    const load = async () => {
      const row = await this.#readCustomer(acting.appId, acting.apiKeyId, id);
      return row && presentCustomer(customerFieldsOf(row));
    };
    const tags = () => [customerTag(id)];
    let shown: CustomerJson | undefined;
    if (acting.unconfirmed && this.#shown.peek(cacheKey) !== undefined) {
      await acting.unconfirmed.confirm();
      shown = await this.#shown.get(cacheKey, load, tags, rememberable);
    } else {
      shown = await this.#shown.fill(cacheKey, load, tags, rememberable);
    }
    if (shown === undefined) throw new NotFoundError('Customer', id);
    noteCustomer(shown.id);
    return shown;
  }

  /**
   * The row of the app's customer `id`, in one statement that confirms the API key `key` (401 when it is
   * revoked; null for the operator, who holds none).
   */
  async #readCustomer(appId: string, key: string | null, id: string): Promise<CustomerRow | undefined> {
    const [row] = await READ_CUSTOMER.run(this.em, [key, key, id, appId]);
    if (!row?.key_ok) throw revokedApiKey();
    if (row.id === null) return undefined;
    const { key_ok: _, ...columns } = row;
    return columns;
  }

  /**
   * Changes `name` and merges `metadata` (see `mergeMetadata`). The row is locked for the merge, so
   * concurrent updates of different keys all survive and the metadata limits hold for the result.
   * `updatedAt` moves only when something actually changed.
   */
  async updateCustomer(
    principal: Principal,
    id: string,
    input: unknown,
    scope?: AppScope,
  ): Promise<Customer> {
    const { appId } = requireApiKey(await actingOnApp(this.em, principal, scope));
    const patch = parseInput(updateCustomerSchema, input);
    if (id.length > MAX_ID_LENGTH) throw new NotFoundError('Customer');
    return this.em.transactional(async (em) => {
      const customer = await em.findOne(
        Customer,
        { id, app: appId },
        { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
      );
      if (!customer) throw new NotFoundError('Customer', id);
      const name = patch.name === undefined ? customer.name : patch.name;
      const metadata =
        patch.metadata === undefined ? customer.metadata : mergeMetadata(customer.metadata, patch.metadata);
      assertMetadataLimits(metadata);
      if (name !== customer.name || !isDeepStrictEqual(metadata, customer.metadata)) {
        customer.name = name;
        customer.metadata = metadata;
        customer.updatedAt = this.clock.now();
        await this.events.record(em, appId, 'customer.updated', presentCustomer(customer), [customer.id]);
      }
      return customer;
    });
  }

  /**
   * The app's customer with this e-mail (in any case), created when there is none: for customers who
   * arrive without the customers API (a magic-link login with `autoCreateCustomer`, a checkout by
   * e-mail). Runs in the caller's transaction `em`; if the same address is created concurrently, that
   * customer is the one (the insert yields to the unique key instead of failing the transaction).
   */
  async findOrCreateByEmail(
    em: EntityManager,
    appId: string,
    email: string,
    details: { readonly name?: string | null } = {},
  ): Promise<Customer> {
    const emailLower = email.toLowerCase();
    const existing = await em.findOne(Customer, { app: appId, emailLower });
    if (existing) return existing;
    const now = this.clock.now();
    const id = newId('cus');
    await em
      .createQueryBuilder(Customer)
      .insert({
        id,
        app: appId,
        email,
        emailLower,
        name: details.name ?? null,
        createdAt: now,
        updatedAt: now,
      })
      .onConflict(['app', 'emailLower'])
      .ignore()
      .execute();
    const customer = await em.findOneOrFail(Customer, { app: appId, emailLower });
    if (customer.id === id)
      await this.events.record(em, appId, 'customer.created', presentCustomer(customer), [customer.id]);
    return customer;
  }

  /**
   * Records the customer's Stripe customer when it has none yet (a completed checkout links it), in the
   * caller's transaction `em`.
   */
  async linkPaymentCustomer(em: EntityManager, customer: Customer, paymentCustomerId: string): Promise<void> {
    if (customer.paymentCustomerId) return;
    customer.paymentCustomerId = paymentCustomerId;
    customer.updatedAt = this.clock.now();
    await this.events.record(em, customer.app.id, 'customer.updated', presentCustomer(customer), [
      customer.id,
    ]);
  }
}
