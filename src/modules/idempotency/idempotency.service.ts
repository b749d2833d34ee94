import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { ConflictError } from '../../core/errors.js';
import { customerIdsIn, IDEMPOTENCY_TTL_MS } from './idempotency-rules.js';

/** Whose record: the credential's id (never its token) and its app. */
export interface IdempotencyScope {
  readonly appId: string;
  readonly credentialId: string;
}

/** A stored first answer. */
export interface StoredResponse {
  readonly status: number;
  readonly contentType: string | null;
  readonly body: string;
}

/** What the caller of `claim` does next: run the request (and report its answer), or replay one. */
export type Claim =
  | {
      readonly kind: 'run';
      /**
       * Stores the answer for replay, or (null) gives the key back so a retry runs again. `subjects`: the
       * customers the request touched (src/core/subjects.ts), recorded with the answer.
       */
      finish(response: StoredResponse | null, subjects?: readonly string[]): Promise<void>;
    }
  | { readonly kind: 'replay'; readonly response: StoredResponse };

export interface IdempotencyTimings {
  /** How long a run holds its record without renewing it; a dead run's record is taken over after this. */
  readonly leaseMs: number;
  /** How long a repeat waits for the first request to finish before answering 409 (in progress). */
  readonly waitMs: number;
  /** Pause between two looks at a running record. */
  readonly pollMs: number;
}

const DEFAULT_TIMINGS: IdempotencyTimings = { leaseMs: 30_000, waitMs: 10_000, pollMs: 50 };

/** Expired records are purged at most this often per process, in batches. */
const PURGE_EVERY_MS = 60_000;
const PURGE_BATCH = 1000;

interface RecordRow {
  fingerprint: string;
  erased_at: Date | null;
  response_status: number | null;
  response_content_type: string | null;
  response_body: string | null;
}

/** Who a customer erasure concerns, as far as stored answers go: ids only, never text to search for. */
export interface ErasedCustomer {
  readonly appId: string;
  readonly customerId: string;
  /** The customer's sessions: answers kept under them are the customer's own. */
  readonly sessionIds: readonly string[];
}

/** What a repeat of a request whose customer was erased is told (409, without running). */
export const ERASED_SUBJECT_MESSAGE =
  'The customer this request concerned was deleted: its answer is no longer kept, and the request does not run again; use a new Idempotency-Key for a new request';

/**
 * The key a tombstone keeps in place of the one sent, which may itself hold a personal value (a key made
 * of the customer's e-mail, say): a digest, which a repeat of the key finds again.
 */
function tombstoneKey(key: string): string {
  return `erased:${createHash('sha256').update(key, 'utf8').digest('hex')}`;
}

/** `tombstoneKey` of the record `r`'s key, in SQL. */
const TOMBSTONE_KEY_SQL = `'erased:' || encode(sha256(convert_to(r.key, 'UTF8')), 'hex')`;

/** The record of the request being served, so that its own customer erasure leaves it to finish. */
const ownRecord = new AsyncLocalStorage<{ readonly credentialId: string; readonly key: string }>();

/**
 * Idempotency keys, shared by every instance through PostgreSQL. `claim` inserts the record before the
 * request runs, under the (credential, key) primary key, so exactly one request runs per key: a repeat
 * with the same request waits for the stored answer and replays it; with another request it is refused
 * (409); past `waitMs` it is refused as still in progress (409). The run renews its lease while it
 * lasts, so a record left by a process that died is taken over by the next repeat once the lease ends.
 */
export class IdempotencyService {
  #lastPurge = 0;
  readonly #timings: IdempotencyTimings;

  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
    timings: Partial<IdempotencyTimings> = {},
  ) {
    this.#timings = { ...DEFAULT_TIMINGS, ...timings };
  }

  private get connection() {
    return this.orm.em.getConnection();
  }

  /**
   * Takes the key for a run, or finds the first answer to replay (see the class comment). `customerIds`
   * are the customers the request names, recorded so that their deletion erases the record.
   */
  async claim(
    scope: IdempotencyScope,
    key: string,
    fingerprint: string,
    customerIds: readonly string[] = [],
  ): Promise<Claim> {
    await this.#purgeNowAndThen();
    const deadline = Date.now() + this.#timings.waitMs;
    for (;;) {
      const ownerToken = randomBytes(16).toString('hex');
      if (await this.#take(scope, key, fingerprint, ownerToken, customerIds))
        return this.#run(scope, key, ownerToken);
      const [row] = await this.connection.execute<RecordRow[]>(
        `select fingerprint, erased_at, response_status, response_content_type, response_body
           from idempotency_record
          where credential_id = ? and (key = ? or (key = ? and expires_at > ?))
          order by erased_at nulls last limit 1`,
        [scope.credentialId, key, tombstoneKey(key), this.clock.now()],
      );
      // Given back (its first run failed with a server error) between the two statements: try again.
      if (!row) continue;
      // A tombstone: the answer concerned a customer since deleted. Neither replayed nor run again.
      if (row.erased_at !== null) throw new ConflictError(ERASED_SUBJECT_MESSAGE);
      if (row.fingerprint !== fingerprint) {
        throw new ConflictError(
          'Idempotency-Key was already used with a different request (method, path or body); use a new key for a new request',
        );
      }
      if (row.response_status !== null) {
        return {
          kind: 'replay',
          response: {
            status: row.response_status,
            contentType: row.response_content_type,
            body: row.response_body ?? '',
          },
        };
      }
      if (Date.now() >= deadline) {
        throw new ConflictError(
          'A request with this Idempotency-Key is still in progress; retry once it has been answered',
        );
      }
      await sleep(this.#timings.pollMs);
    }
  }

  /**
   * Inserts the record as running, or takes over one that expired, or one of the same request whose run
   * died (lease passed without an answer); never while the key's tombstone lasts. True when this run now
   * holds it.
   */
  async #take(
    scope: IdempotencyScope,
    key: string,
    fingerprint: string,
    ownerToken: string,
    customerIds: readonly string[],
  ): Promise<boolean> {
    const now = this.clock.now();
    const rows = await this.connection.execute<unknown[]>(
      `insert into idempotency_record as r
         (credential_id, key, app_id, fingerprint, owner_token, locked_until, customer_ids, created_at, expires_at)
       select ?, ?, ?, ?, ?, ?::timestamptz, ?::jsonb, ?::timestamptz, ?::timestamptz
        where not exists (select 1 from idempotency_record t
                           where t.credential_id = ? and t.key = ? and t.expires_at > ?)
       on conflict (credential_id, key) do update
         set app_id = excluded.app_id, fingerprint = excluded.fingerprint, owner_token = excluded.owner_token,
             locked_until = excluded.locked_until, customer_ids = excluded.customer_ids,
             created_at = excluded.created_at,
             expires_at = excluded.expires_at, response_status = null, response_content_type = null,
             response_body = null
         where r.expires_at <= ?
            or (r.response_status is null and r.erased_at is null and r.locked_until <= ?
                and r.fingerprint = excluded.fingerprint)
       returning 1`,
      [
        scope.credentialId,
        key,
        scope.appId,
        fingerprint,
        ownerToken,
        new Date(now.getTime() + this.#timings.leaseMs),
        JSON.stringify(customerIds),
        now,
        new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
        scope.credentialId,
        tombstoneKey(key),
        now,
        now,
        now,
      ],
    );
    return rows.length === 1;
  }

  #run(scope: IdempotencyScope, key: string, ownerToken: string): Claim {
    const where = 'credential_id = ? and key = ? and owner_token = ?';
    const ids = [scope.credentialId, key, ownerToken];
    // Renewed while the request runs, so a slow request is never mistaken for a dead one.
    const renew = setInterval(() => {
      const until = new Date(this.clock.now().getTime() + this.#timings.leaseMs);
      this.connection
        .execute(`update idempotency_record set locked_until = ? where ${where}`, [until, ...ids])
        .catch(() => undefined); // a missed renewal only shortens the lease; the next one retries
    }, this.#timings.leaseMs / 3);
    renew.unref();
    return {
      kind: 'run',
      finish: async (response, subjects = []) => {
        clearInterval(renew);
        if (response === null) {
          await this.connection.execute(`delete from idempotency_record where ${where}`, ids);
          return;
        }
        // A record whose customer was erased while it ran is a tombstone under another key by now: its
        // answer is never stored.
        await this.connection.execute(
          `update idempotency_record
              set response_status = ?, response_content_type = ?, response_body = ?, owner_token = null,
                  locked_until = null,
                  customer_ids = (select coalesce(jsonb_agg(distinct id order by id), '[]')
                                    from (select jsonb_array_elements_text(customer_ids) as id
                                          union select jsonb_array_elements_text(?::jsonb)) as named)
            where ${where} and erased_at is null`,
          [
            response.status,
            response.contentType,
            response.body,
            JSON.stringify([...new Set([...subjects, ...customerIdsIn(response.body)])]),
            ...ids,
          ],
        );
      },
    };
  }

  /**
   * Runs `work` (the rest of the request) as the request holding this record: an erasure it makes leaves
   * the record to finish, so a repeat of a customer's deletion replays the deletion.
   */
  runAsRecord<T>(scope: IdempotencyScope, key: string, work: () => T): T {
    return ownRecord.run({ credentialId: scope.credentialId, key }, work);
  }

  /**
   * Turns into tombstones, in the caller's transaction, the records of the customer, selected by id alone
   * (never by searching text): those kept under its sessions, and those whose request touched it (the
   * `customerIds` recorded when they were written). A tombstone keeps only its credential, a digest of
   * its key (a key may hold a personal value) and its expiry (no request fingerprint, no answer, no ids):
   * a repeat is refused with 409 until it expires, neither replayed nor run again. A record still
   * running becomes one too, and its answer is never stored, except the record of the request making
   * this erasure, which finishes as usual.
   */
  async eraseCustomer(em: EntityManager, customer: ErasedCustomer): Promise<void> {
    const own = ownRecord.getStore();
    const erased = `r.app_id = ? and r.erased_at is null
          and (r.credential_id in (select jsonb_array_elements_text(?::jsonb)) or r.customer_ids @> ?::jsonb)
          and not (r.credential_id = ? and r.key = ?)`;
    const params = [
      customer.appId,
      JSON.stringify(customer.sessionIds),
      JSON.stringify([customer.customerId]),
      own?.credentialId ?? '',
      own?.key ?? '',
    ];
    // An earlier tombstone of the same key has expired (a live one keeps the key from being used again)
    // and waits for the purge: it makes room.
    await em.execute(
      `delete from idempotency_record t using idempotency_record r
        where ${erased} and t.credential_id = r.credential_id and t.key = ${TOMBSTONE_KEY_SQL}`,
      params,
    );
    await em.execute(
      `update idempotency_record r
          set erased_at = ?, key = ${TOMBSTONE_KEY_SQL}, fingerprint = '', customer_ids = '[]',
              owner_token = null, locked_until = null, response_status = null, response_content_type = null,
              response_body = null
        where ${erased}`,
      [this.clock.now(), ...params],
    );
  }

  /** Deletes expired records (at most a batch at a time, at most once a minute per process). */
  async #purgeNowAndThen(): Promise<void> {
    if (Date.now() - this.#lastPurge < PURGE_EVERY_MS) return;
    this.#lastPurge = Date.now();
    await this.purgeExpired();
  }

  /**
   * Deletes up to one batch of expired records; returns how many went. Expired by this instance's clock
   * and by the database's: an instance whose clock runs ahead deletes no answer that the others (and the
   * database) still hold valid.
   */
  async purgeExpired(): Promise<number> {
    const rows = await this.connection.execute<unknown[]>(
      `delete from idempotency_record
        where ctid = any(array(select ctid from idempotency_record where expires_at <= least(?, now())
                                limit ${PURGE_BATCH}))
       returning 1`,
      [this.clock.now()],
    );
    return rows.length;
  }
}
