import type { CustomerRowsNotice, NoticeRow } from './customer-rows-notice.js';

/**
 * What one instance remembers about an app's customer list, per e-mail filter: the exact total and
 * some positions in the list order, each valid for the app's counter shards at the versions it holds
 * (`customer_count.version`, per shard: see customer-count.entity.ts).
 *
 * A request reads the app's shard versions in the same snapshot as its page and uses what is remembered
 * only when every shard's version is the one remembered, so nothing here is ever stale: any other
 * version means other customers, and the request counts again. The versions are read from the
 * database, so writes through another instance or with plain SQL are seen just the same.
 *
 * What keeps an entry useful while the app is written to: every statement that changes an app's list
 * announces, after commit, the shard it wrote, that shard's new version, and the rows it added and
 * removed (CustomerRowsNotice, sent by triggers). A shard's versions commit in order (one session
 * writes a shard, or sessions sharing one queue on its row), and notices arrive in commit order, so
 * the notice that takes a shard from the remembered version v to v + 1 is exactly the statement the
 * remembered figures lack: its rows are tested against the filter here and the total, the short
 * list's rows and the positions after them move by one each. A notice of a version already held is
 * skipped; one further ahead means a notice was missed (a TRUNCATE, a statement too large to announce,
 * a lost connection), and the entry is forgotten.
 */

/** The row at `position` (0 = newest) of a list, by its sort key `(created_at, id)`. */
export interface ListAnchor {
  readonly position: number;
  /** created_at as PostgreSQL prints it: exact to the microsecond, read back with `::timestamptz`. */
  readonly createdAt: string;
  /** created_at in microseconds since the epoch, to compare with the rows of a notice. */
  readonly at: number;
  readonly id: string;
}

/** A row of a short list remembered whole: its id and created_at in microseconds since the epoch. */
export interface ListRow {
  readonly id: string;
  readonly at: number;
}

/** What one count found, in one snapshot. */
export interface ListCount {
  /** The app's shard versions as SHARDS_SQL prints them (`shard:version,…` by shard). */
  readonly version: string;
  readonly total: number;
  /** The share of the app's customers in the list (1 without a filter): how far a walk must go. */
  readonly density: number;
  /** Every row of a short filtered list, newest first; null for a longer one. */
  readonly rows: readonly ListRow[] | null;
  /**
   * The unfiltered list's newest rows, newest first, at most HEAD_ROWS: the ids of its first pages,
   * whose customers the instance may remember as shown (see `presentCustomerPage`). Every row of the
   * list when there are as many as `total`.
   */
  readonly head?: readonly ListRow[] | null;
}

export interface ListSnapshot extends ListCount {
  /** Sorted by position, no two at the same one. */
  readonly anchors: readonly ListAnchor[];
}

/** A notice as an entry applied it: its matching rows, and the shard's version before it (if any). */
interface Applied {
  readonly shard: number;
  readonly v: number;
  readonly before: number | undefined;
  readonly ins: readonly NoticeRow[];
  readonly del: readonly NoticeRow[];
}

/** An entry as kept: its figures, whose list it is, its shards' versions and the notices applied. */
interface Entry {
  snapshot: ListSnapshot;
  readonly appId: string;
  /** The lower-cased text the e-mail must contain; null for the unfiltered list. */
  readonly fragment: string | null;
  readonly shards: Map<number, number>;
  /** The last notices applied, oldest first, to find the list as it was a few writes ago (`at`). */
  applied: Applied[];
}

/**
 * A list keeps about 200 anchors from its walks (see LIST_ANCHORS in customers.service.ts), walks from
 * other starting points as many again; more are not kept. So the cache holds at most
 * capacity × MAX_ANCHORS anchors of about 150 bytes: 60 MB if every entry were a huge list, in practice
 * far less (a filtered list rarely has any).
 */
const MAX_ANCHORS = 400;

/**
 * A short list grown past this many rows by inserts is kept as a longer one (no rows, walked instead).
 * Matches SHORT_LIST in customers.service.ts.
 */
const MAX_ROWS = 100;

/** The most rows a head keeps (a head grown past it by inserts drops its oldest). */
export const HEAD_ROWS = 100;

/**
 * Notices kept to bring an entry stored after a count up to date: the ones that arrived while it was
 * counted (its snapshot may predate them). Older ones are found already included and skipped; if a
 * count outlasted this many notices, the entry finds a gap and is not kept.
 */
const RECENT_NOTICES = 4_096;

/** Notices an entry keeps to be undone (`at`): a few seconds of writes to one app at 100 a second. */
const APPLIED_NOTICES = 1_024;

/** The version vector of `shards` as SHARDS_SQL prints it. */
function printShards(shards: ReadonlyMap<number, number>): string {
  return [...shards.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([shard, version]) => `${shard}:${version}`)
    .join(',');
}

function parseShards(version: string): Map<number, number> {
  const shards = new Map<number, number>();
  if (version === '') return shards;
  for (const part of version.split(',')) {
    const [shard, v] = part.split(':');
    shards.set(Number(shard), Number(v));
  }
  return shards;
}

/**
 * -1 when row `r` comes before `anchor` in the list (it is newer), 1 after it, 0 the same row, null
 * when they tie on created_at with other ids: their order is the database collation's for ids, which
 * this side does not assume.
 */
function compare(r: NoticeRow, key: { readonly at: number; readonly id: string }): -1 | 0 | 1 | null {
  if (r[1] !== key.at) return r[1] > key.at ? -1 : 1;
  return r[0] === key.id ? 0 : null;
}

/**
 * Applies one statement's rows of the list (removed, then added) to its figures; null when they cannot
 * be applied exactly. A removed row that is an anchor takes the anchor with it.
 */
function adjust(
  snapshot: ListSnapshot,
  removed: readonly NoticeRow[],
  added: readonly NoticeRow[],
): ListSnapshot | null {
  let total = snapshot.total;
  let rows = snapshot.rows === null ? null : [...snapshot.rows];
  let anchors = [...snapshot.anchors];
  for (const r of removed) {
    total--;
    if (rows !== null) {
      const at = rows.findIndex((row) => row.id === r[0]);
      if (at < 0) return null;
      rows.splice(at, 1);
    }
    const moved: ListAnchor[] = [];
    for (const anchor of anchors) {
      const order = compare(r, anchor);
      if (order === null) return null;
      if (order === 0) continue;
      moved.push(order < 0 ? { ...anchor, position: anchor.position - 1 } : anchor);
    }
    anchors = moved;
  }
  for (const r of added) {
    total++;
    if (rows !== null) {
      let at = 0;
      for (; at < rows.length; at++) {
        const order = compare(r, rows[at]!);
        if (order === null || order === 0) return null;
        if (order < 0) break;
      }
      rows.splice(at, 0, { id: r[0], at: r[1] });
      if (rows.length > MAX_ROWS) rows = null;
    }
    const moved: ListAnchor[] = [];
    for (const anchor of anchors) {
      const order = compare(r, anchor);
      if (order === null || order === 0) return null;
      moved.push(order < 0 ? { ...anchor, position: anchor.position + 1 } : anchor);
    }
    anchors = moved;
  }
  if (!snapshot.head) return { ...snapshot, total, rows, anchors };
  const head = adjustHead(snapshot.head, snapshot.total, removed, added);
  return head === undefined ? null : { ...snapshot, total, rows, anchors, head };
}

/**
 * The newest rows of a list after one statement's removed and added rows; `total` is the list's before
 * them. A row newer than the head's oldest belongs in it: it is added there, or, removed, must have been
 * there. Undefined when that does not hold or the order cannot be told (a tie), as for `adjust`.
 */
function adjustHead(
  head: readonly ListRow[],
  total: number,
  removed: readonly NoticeRow[],
  added: readonly NoticeRow[],
): ListRow[] | undefined {
  const rows = [...head];
  let whole = rows.length === total;
  for (const r of removed) {
    const at = rows.findIndex((row) => row.id === r[0]);
    if (at >= 0) {
      rows.splice(at, 1);
      continue;
    }
    const last = rows.at(-1);
    if (whole || last === undefined) return undefined;
    const order = compare(r, last);
    if (order === null || order <= 0) return undefined;
  }
  for (const r of added) {
    let at = 0;
    for (; at < rows.length; at++) {
      const order = compare(r, rows[at]!);
      if (order === null || order === 0) return undefined;
      if (order < 0) break;
    }
    // Older than every row of a head that is not the whole list: somewhere after it.
    if (at === rows.length && !whole) continue;
    rows.splice(at, 0, { id: r[0], at: r[1] });
    if (rows.length > HEAD_ROWS) {
      rows.pop();
      whole = false;
    }
  }
  return rows;
}

/**
 * A small LRU of list snapshots, adjusted by the notices of the app's writes, with single-flight
 * counting: while one request counts a key, the others wait for it instead of counting the same rows
 * beside it.
 */
export class CustomerListCache {
  private readonly entries = new Map<string, Entry>();
  private readonly byApp = new Map<string, Set<string>>();
  private readonly counting = new Map<string, Promise<unknown>>();
  private recent: CustomerRowsNotice[] = [];

  constructor(private readonly capacity = 1_000) {}

  static key(appId: string, fragment: string | null): string {
    return fragment === null ? appId : `${appId}\u0000${fragment}`;
  }

  get(key: string): ListSnapshot | undefined {
    const entry = this.entries.get(key);
    if (entry) {
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return entry?.snapshot;
  }

  /**
   * The list of `key` as it was at the shard versions `version`, earlier than or equal to what is
   * remembered now: the notices applied since are undone, newest first. Undefined when that is not
   * possible exactly (not remembered, a version it never held, notices no longer kept, a tie).
   */
  at(key: string, version: string): ListSnapshot | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.snapshot.version === version) return entry.snapshot;
    const target = parseShards(version);
    const shards = new Map(entry.shards);
    let snapshot: ListSnapshot | null = entry.snapshot;
    for (let i = entry.applied.length - 1; i >= 0 && snapshot !== null; i--) {
      const applied = entry.applied[i]!;
      if (applied.v <= (target.get(applied.shard) ?? 0)) continue;
      if (shards.get(applied.shard) !== applied.v) return undefined;
      snapshot = adjust(snapshot, applied.ins, applied.del);
      if (applied.before === undefined) shards.delete(applied.shard);
      else shards.set(applied.shard, applied.before);
    }
    if (snapshot === null || printShards(shards) !== version) return undefined;
    return { ...snapshot, version };
  }

  /** Adds the anchors a walk passed at `version`, if the list is still remembered at that version. */
  addAnchors(key: string, version: string, anchors: readonly ListAnchor[]): void {
    const entry = this.entries.get(key);
    if (entry?.snapshot.version !== version || anchors.length === 0) return;
    entry.snapshot = { ...entry.snapshot, anchors: mergeAnchors(entry.snapshot.anchors, anchors) };
  }

  /**
   * Remembers what a request read in a snapshot of the shard versions `count.version`. Anchors read at
   * the entry's current versions are merged with the ones already known (anchors of an older snapshot
   * are dropped: positions may have moved since). A count of other versions replaces the entry and is
   * brought up to date with the notices that arrived meanwhile; if one is missing, it is not kept.
   */
  store(
    key: string,
    appId: string,
    fragment: string | null,
    count: ListCount,
    anchors: readonly ListAnchor[],
  ): void {
    const known = this.entries.get(key);
    if (known && known.snapshot.version === count.version) {
      if (anchors.length > 0) {
        known.snapshot = { ...known.snapshot, anchors: mergeAnchors(known.snapshot.anchors, anchors) };
      }
      if (count.head && !known.snapshot.head) known.snapshot = { ...known.snapshot, head: count.head };
      this.touch(key, known);
      return;
    }
    const entry: Entry = {
      snapshot: { ...count, anchors: mergeAnchors([], anchors) },
      appId,
      fragment,
      shards: parseShards(count.version),
      applied: [],
    };
    for (const notice of this.recent) {
      if (notice.app === appId && !this.apply(entry, notice)) {
        this.delete(key);
        return;
      }
    }
    this.touch(key, entry);
    while (this.entries.size > this.capacity) this.delete(this.entries.keys().next().value as string);
  }

  /** One statement's notice (its payload as sent): every list of the app is adjusted or forgotten. */
  notice(payload: string): void {
    let notice: CustomerRowsNotice;
    try {
      notice = JSON.parse(payload) as CustomerRowsNotice;
    } catch {
      this.reset();
      return;
    }
    this.recent.push(notice);
    if (this.recent.length > RECENT_NOTICES * 2) this.recent = this.recent.slice(-RECENT_NOTICES);
    const keys = this.byApp.get(notice.app);
    if (!keys) return;
    for (const key of [...keys]) {
      const entry = this.entries.get(key);
      if (entry && !this.apply(entry, notice)) this.delete(key);
    }
  }

  /** Notices may have been missed: nothing remembered can be brought up to date any more. */
  reset(): void {
    this.entries.clear();
    this.byApp.clear();
    this.recent = [];
  }

  /** The count of `key` under way, if any. */
  inFlight(key: string): Promise<unknown> | undefined {
    return this.counting.get(key);
  }

  /** Runs `count` as the one count of `key` under way until it settles. */
  async lead<T>(key: string, count: () => Promise<T>): Promise<T> {
    const running = count();
    this.counting.set(key, running);
    try {
      return await running;
    } finally {
      if (this.counting.get(key) === running) this.counting.delete(key);
    }
  }

  get size(): number {
    return this.entries.size;
  }

  /** False when `notice` shows a missed one, or its rows cannot be applied exactly. */
  private apply(entry: Entry, notice: CustomerRowsNotice): boolean {
    const before = entry.shards.get(notice.shard);
    const held = before ?? 0;
    if (notice.v <= held) return true;
    if (notice.v > held + 1 || notice.ins === undefined || notice.del === undefined) return false;
    const fragment = entry.fragment;
    const matches = (r: NoticeRow) => fragment === null || r[2].includes(fragment);
    const ins = notice.ins.filter(matches);
    const del = notice.del.filter(matches);
    const adjusted = adjust(entry.snapshot, del, ins);
    if (adjusted === null) return false;
    entry.shards.set(notice.shard, notice.v);
    entry.snapshot = { ...adjusted, version: printShards(entry.shards) };
    entry.applied.push({ shard: notice.shard, v: notice.v, before, ins, del });
    if (entry.applied.length > APPLIED_NOTICES * 2) entry.applied = entry.applied.slice(-APPLIED_NOTICES);
    return true;
  }

  private touch(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.entries.set(key, entry);
    const keys = this.byApp.get(entry.appId);
    if (keys) keys.add(key);
    else this.byApp.set(entry.appId, new Set([key]));
  }

  private delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    const keys = this.byApp.get(entry.appId);
    keys?.delete(key);
    if (keys?.size === 0) this.byApp.delete(entry.appId);
  }
}

function mergeAnchors(known: readonly ListAnchor[], added: readonly ListAnchor[]): ListAnchor[] {
  const byPosition = new Map<number, ListAnchor>();
  for (const anchor of known) byPosition.set(anchor.position, anchor);
  for (const anchor of added) {
    if (byPosition.size >= MAX_ANCHORS) break;
    byPosition.set(anchor.position, anchor);
  }
  return [...byPosition.values()].sort((a, b) => a.position - b.position);
}
