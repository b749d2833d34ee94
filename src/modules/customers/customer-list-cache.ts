/**
 * What one instance remembers about an app's customer list, per e-mail filter: the exact total and
 * some positions in the list order, each valid only for the app's write version it was read with
 * (`customer_count.version`, see customer-count.entity.ts). A request reads the version in the same
 * snapshot as its page and uses what is remembered only when the versions are equal, so nothing here is
 * ever stale: a different version means other customers, and the request counts again. The version is
 * read from the database, so writes through another instance or with plain SQL are seen just the same.
 */

/** The row at `position` (0 = newest) of a list, by its sort key `(created_at, id)`. */
export interface ListAnchor {
  readonly position: number;
  /** created_at as PostgreSQL prints it: exact to the microsecond, read back with `::timestamptz`. */
  readonly createdAt: string;
  readonly id: string;
}

/** What one count found, at one version. */
export interface ListCount {
  readonly version: string;
  readonly total: number;
  /** The share of the app's customers in the list (1 without a filter): how far a walk must go. */
  readonly density: number;
  /** Every id of a short filtered list, newest first; null for a longer one. */
  readonly ids: readonly string[] | null;
}

export interface ListSnapshot extends ListCount {
  /** Sorted by position, no two at the same one. */
  anchors: ListAnchor[];
}

/**
 * A list keeps about 200 anchors from its walks (see LIST_ANCHORS in customers.service.ts), walks from
 * other starting points as many again; more are not kept. So the cache holds at most
 * capacity × MAX_ANCHORS anchors of about 150 bytes: 60 MB if every entry were a huge list, in practice
 * far less (a filtered list rarely has any).
 */
const MAX_ANCHORS = 400;

/**
 * A small LRU of list snapshots with single-flight counting: while one request counts a key, the others
 * wait for it instead of counting the same rows beside it.
 */
export class CustomerListCache {
  private readonly entries = new Map<string, ListSnapshot>();
  private readonly counting = new Map<string, Promise<unknown>>();

  constructor(private readonly capacity = 1_000) {}

  static key(appId: string, pattern: string | null): string {
    return pattern === null ? appId : `${appId}\u0000${pattern}`;
  }

  get(key: string): ListSnapshot | undefined {
    const entry = this.entries.get(key);
    if (entry) {
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return entry;
  }

  /**
   * Remembers what a request read at `version`. Anchors of the same version are merged with the ones
   * already known; another version replaces the entry (whichever request stored last wins, which is
   * fine: an entry is only ever used after its version is checked).
   */
  store(key: string, count: ListCount, anchors: readonly ListAnchor[]): void {
    const known = this.entries.get(key);
    const entry: ListSnapshot = known && known.version === count.version ? known : { ...count, anchors: [] };
    if (anchors.length > 0) entry.anchors = mergeAnchors(entry.anchors, anchors);
    this.entries.delete(key);
    this.entries.set(key, entry);
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
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
