import type { EntityManager } from '@mikro-orm/postgresql';
import type pg from 'pg';
import { newId } from '../../core/ids.js';
import type { MeteredFeature, Period } from '../plans/metered-feature.js';
import type { BucketKind } from './credit-bucket.entity.js';
import type { UsageSource } from './usage-record.entity.js';

/**
 * The burn-down rule (buckets pay in order of priority, lower first, then earliest expiry, no expiry last,
 * then creation time, then id) lives in one place: the database function `tollgate_consume`, which every
 * consumption runs; its current text is in the newest migration that replaces it
 * (migrations/Migration20261126150000.ts, which added overage).
 */
/** Whose balance: a customer, or an organization (with the member acting, if any). */
export interface Subject {
  readonly appId: string;
  /** The customer's or the organization's id. */
  readonly subjectId: string;
  /** The customer whose balance it is, or the member consuming an organization's. */
  readonly customerId: string | null;
  readonly organizationId: string | null;
}

/** A metered feature in the period a request falls in. */
export interface Meter {
  readonly feature: string;
  readonly definition: MeteredFeature;
  readonly period: Period;
}

/** A live balance: the exact state of the subject's active buckets. */
export interface Balance {
  readonly feature: string;
  /** This period's allowance (the plan's limit). */
  readonly limit: number;
  /** Active grants and the rollover from the previous period. */
  readonly granted: number;
  /** Consumed this period (refunds deducted). */
  readonly used: number;
  /** What the unspent active buckets hold. */
  readonly remaining: number;
  /** Consumed past the balance this period (a feature with overage; refunds deducted), billed per unit. */
  readonly overage: number;
  /** When the period ends; null for a feature that never resets. */
  readonly resetsAt: Date | null;
}

/** A grant as both APIs show it. */
export interface CreditGrant {
  readonly id: string;
  readonly customerId: string | null;
  readonly organizationId: string | null;
  readonly feature: string;
  readonly amount: number;
  /** What is left of it now: 0 once voided or expired. */
  readonly remaining: number;
  readonly priority: number;
  readonly expiresAt: Date | null;
  readonly description: string | null;
  readonly voidedAt: Date | null;
  readonly createdAt: Date;
}

interface BucketRow {
  readonly id: string;
  readonly feature: string;
  readonly kind: BucketKind;
  readonly amount: string | null;
  readonly spent: string;
  readonly used: string;
  readonly overage: string;
  /** Epoch milliseconds (timestamps are read as numbers: the driver hands back text). */
  readonly period_end: number | null;
  readonly expires_at: number | null;
}

interface GrantRow {
  readonly id: string;
  readonly customer_id: string | null;
  readonly organization_id: string | null;
  readonly feature: string;
  readonly amount: string;
  readonly spent: string;
  readonly priority: number;
  readonly expires_at: number | null;
  readonly description: string | null;
  readonly voided_at: number | null;
  readonly created_at: number;
}

/** A timestamp column as epoch milliseconds. */
const ms = (column: string, as: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${as}`;

const BUCKET_COLUMNS = `b.id, b.feature, b.kind, b.amount, b.spent, b.used, b.overage, ${ms('b.period_end', 'period_end')},
  ${ms('b.expires_at', 'expires_at')}`;

/** A grant that still pays: not voided, not expired. */
const ACTIVE_GRANT = `b.kind = 'grant' and b.voided_at is null and (b.expires_at is null or b.expires_at > ?)`;

/** Buckets of `features` a balance reads: active grants, and allowances/rollovers of the given periods. */
const READ_BUCKETS = `
  select ${BUCKET_COLUMNS} from credit_bucket b
   where b.subject_id = ?
     and b.feature in (select jsonb_array_elements_text(?::jsonb))
     and ((${ACTIVE_GRANT})
       or (b.kind <> 'grant' and b.period_end in (select jsonb_array_elements_text(?::jsonb)::timestamptz)))`;

/**
 * The rollover into a new period: the previous period's unspent allowance under the current limit, at
 * most `rollover.max`, when the subject existed then. The previous allowance has expired, so its `spent`
 * no longer moves (refunds into it lapse) and this reads the same now as on any later read.
 */
const CARRIED = `least(?::bigint, greatest(0, ?::bigint - coalesce((
    select p.spent from credit_bucket p
     where p.subject_id = ? and p.feature = ? and p.kind = 'allowance' and p.period_end = ?), 0)))
  * (case when exists (select 1 from customer c where c.id = ? and c.created_at < ?)
           or exists (select 1 from organization o where o.id = ? and o.created_at < ?) then 1 else 0 end)`;

const READ_CARRIED = `select ${CARRIED} as carried`;

/** One consumption, one statement (see `ledger.consume`). */
const CONSUME = `select outcome, allowance_id, granted, used, remaining, overage
  from tollgate_consume(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?)`;

interface ConsumeRow {
  readonly outcome: 'recorded' | 'refused' | 'reaches_zero';
  readonly allowance_id: string;
  readonly granted: string;
  readonly used: string;
  readonly remaining: string;
  readonly overage: string;
}

const GRANT_COLUMNS = `id, customer_id, organization_id, feature, amount, spent, priority, ${ms('expires_at', 'expires_at')},
  description, ${ms('voided_at', 'voided_at')}, ${ms('created_at', 'created_at')}`;

function periodKeys(meters: readonly Meter[]): string[] {
  const keys = new Set<string>();
  for (const { period } of meters) {
    keys.add(period.end.toISOString());
    if (period.previous) keys.add(period.previous.end.toISOString());
  }
  return [...keys];
}

/** What a bucket can still pay now; an allowance holds the plan's current limit less what it paid. */
function available(row: BucketRow, limit: number): number {
  const size = row.kind === 'allowance' ? limit : Number(row.amount);
  return Math.max(0, size - Number(row.spent));
}

/**
 * A feature's balance from its active buckets (`rows`: its grants and the current period's allowance and
 * rollover). `carried`: the rollover a period not yet touched would start with (its row does not exist).
 */
function balanceOf(meter: Meter, rows: readonly BucketRow[], carried: number): Balance {
  const key = meter.period.end.getTime();
  const limit = meter.definition.limit;
  let granted = 0;
  let used = 0;
  let remaining = 0;
  let overage = 0;
  let allowance = false;
  for (const row of rows) {
    if (row.feature !== meter.feature) continue;
    if (row.kind !== 'grant' && row.period_end !== key) continue;
    remaining += available(row, limit);
    if (row.kind === 'allowance') {
      allowance = true;
      used = Number(row.used);
      overage = Number(row.overage);
    } else {
      granted += Number(row.amount);
    }
  }
  if (!allowance) remaining += limit + carried;
  if (!allowance) granted += carried;
  return {
    feature: meter.feature,
    limit,
    granted,
    used,
    remaining,
    overage,
    resetsAt: meter.period.resetsAt,
  };
}

/**
 * Where the ledger's statements run: the ORM's entity manager (in its transaction, when it has one), or
 * a pooled `pg` client, for a statement that is its own transaction: the consumption's fast path, which
 * skips the ORM's transaction machinery (see MeteringService.recordUsage).
 */
export type Db = EntityManager | pg.PoolClient;

/** Each statement's `$n` form and the name it is prepared under on every connection. */
const PREPARED = new Map<string, { name: string; text: string }>();

function prepared(sql: string): { name: string; text: string } {
  let statement = PREPARED.get(sql);
  if (!statement) {
    let n = 0;
    statement = { name: `tollgate_ledger_${PREPARED.size}`, text: sql.replace(/\?/g, () => `$${++n}`) };
    PREPARED.set(sql, statement);
  }
  return statement;
}

async function exec<T = Record<string, unknown>>(
  db: Db,
  sql: string,
  params: readonly unknown[],
): Promise<T[]> {
  if ('getConnection' in db) {
    return db.getConnection().execute<T[]>(sql, [...params], 'all', db.getTransactionContext());
  }
  const result = await db.query({ ...prepared(sql), values: [...params] });
  return result.rows as T[];
}

function carriedParams(subject: Subject, meter: Meter): unknown[] {
  const previous = meter.period.previous!;
  return [
    meter.definition.rollover!.max,
    meter.definition.limit,
    subject.subjectId,
    meter.feature,
    previous.end,
    subject.subjectId,
    previous.end,
    subject.subjectId,
    previous.end,
  ];
}

/** Whether a period starts with a rollover at all. */
function rollsOver(meter: Meter): boolean {
  return meter.definition.rollover !== undefined && meter.period.previous !== null;
}

async function readBalances(
  db: Db,
  subject: Subject,
  meters: readonly Meter[],
  now: Date,
): Promise<{ balances: Balance[]; expiresAt: number | null }> {
  if (meters.length === 0) return { balances: [], expiresAt: null };
  const rows = await exec<BucketRow>(db, READ_BUCKETS, [
    subject.subjectId,
    JSON.stringify(meters.map((m) => m.feature)),
    now,
    JSON.stringify(periodKeys(meters)),
  ]);
  const balances: Balance[] = [];
  for (const meter of meters) {
    const key = meter.period.end.getTime();
    // A period no consumption has touched yet starts with the rollover its first consumption will create.
    const touched = rows.some(
      (r) => r.feature === meter.feature && r.kind === 'allowance' && r.period_end === key,
    );
    let carried = 0;
    if (rollsOver(meter) && !touched) {
      const [row] = await exec<{ carried: string }>(db, READ_CARRIED, carriedParams(subject, meter));
      carried = Number(row?.carried ?? 0);
    }
    balances.push(balanceOf(meter, rows, carried));
  }
  let expiresAt: number | null = null;
  for (const row of rows) {
    if (row.expires_at !== null && (expiresAt === null || row.expires_at < expiresAt))
      expiresAt = row.expires_at;
  }
  return { balances, expiresAt };
}

/** The result of one consumption: recorded (with its usage id), or refused with nothing changed. */
export type Consumption =
  | {
      readonly allowed: true;
      readonly usageId: string;
      readonly balance: Balance;
      readonly before: Balance;
      /** The part of the amount past the balance (0 unless the feature has overage). */
      readonly overage: number;
    }
  | { readonly allowed: false; readonly balance: Balance };

/**
 * The credit ledger: balances, consumptions, refunds and grants in PostgreSQL, each in one short
 * transaction of the caller's (`em` carries it) so balances are exact across instances.
 */
export const ledger = {
  /** The live balances of `meters` (no locks, nothing written: a period no one touched reads as fresh). */
  async balances(db: Db, subject: Subject, meters: readonly Meter[], now: Date): Promise<Balance[]> {
    return (await readBalances(db, subject, meters, now)).balances;
  },

  /**
   * The same, with the first time (epoch milliseconds) a bucket they count expires: until then, and
   * while no bucket of the subject changes, they stay what they are (null: no bucket expires).
   */
  balancesUntil: readBalances,

  /**
   * Takes `amount` from the subject's buckets in burn-down order and records the usage, or takes nothing
   * when they hold less: one statement, the database function `tollgate_consume` (the burn-down rule's one
   * place, see its migration). Run alone it is its own transaction; in the ORM's transaction (`em`), the
   * allowance row it locks first serializes the subject's consumptions until that transaction commits.
   * `stopBeforeZero`: a consumption that would empty the balance takes nothing and answers `reaches_zero`.
   * A feature with overage takes what the balance lacks as overage instead of refusing.
   */
  async consume(
    db: Db,
    subject: Subject,
    meter: Meter,
    amount: number,
    metadata: object,
    now: Date,
    stopBeforeZero = false,
  ): Promise<Consumption | { readonly allowed: 'reaches_zero' }> {
    const { period, definition } = meter;
    const usageId = newId('use');
    const [row] = await exec<ConsumeRow>(db, CONSUME, [
      newId('bkt'),
      newId('bkt'),
      usageId,
      subject.appId,
      subject.subjectId,
      subject.organizationId === null ? subject.customerId : null,
      subject.customerId,
      subject.organizationId,
      meter.feature,
      definition.limit,
      amount,
      period.start,
      period.end,
      period.resetsAt,
      rollsOver(meter) ? definition.rollover!.max : null,
      period.previous?.start ?? null,
      period.previous?.end ?? null,
      JSON.stringify(metadata),
      now,
      stopBeforeZero,
      definition.overage?.stripePriceId ?? null,
    ]);
    if (row!.outcome === 'reaches_zero') return { allowed: 'reaches_zero' };
    const before: Balance = {
      feature: meter.feature,
      limit: definition.limit,
      granted: Number(row!.granted),
      used: Number(row!.used),
      remaining: Number(row!.remaining),
      overage: Number(row!.overage),
      resetsAt: period.resetsAt,
    };
    if (row!.outcome === 'refused') return { allowed: false, balance: before };
    const paid = Math.min(amount, before.remaining);
    return {
      allowed: true,
      usageId,
      before,
      overage: amount - paid,
      balance: {
        ...before,
        used: before.used + amount,
        remaining: before.remaining - paid,
        overage: before.overage + amount - paid,
      },
    };
  },

  /**
   * Marks a usage refunded and gives each part back to the bucket that paid it, where that bucket is
   * still active (a part whose bucket expired or was voided lapses). `missing` / `refunded` when it
   * cannot; else the usage's subject and feature, for the caller to read the balance after.
   */
  async refund(
    em: EntityManager,
    appId: string,
    usageId: string,
    now: Date,
  ): Promise<
    | { readonly result: 'missing' }
    | { readonly result: 'refunded' }
    | {
        readonly result: 'ok';
        readonly subjectId: string;
        readonly feature: string;
        /** The usage's overage, whose meter event is now to be cancelled. */
        readonly overage: number;
      }
  > {
    const [usage] = await exec<{
      subject_id: string;
      feature: string;
      amount: string;
      overage: string;
      period_end: unknown;
      sources: UsageSource[];
      refunded_at: Date | null;
    }>(
      em,
      `select subject_id, feature, amount, overage, period_end, sources, refunded_at from usage_record
        where id = ? and app_id = ? for update`,
      [usageId, appId],
    );
    if (!usage) return { result: 'missing' };
    if (usage.refunded_at !== null) return { result: 'refunded' };
    // The usage's period allowance first, as a consumption of that period takes it, so the two never deadlock.
    await exec(
      em,
      `update credit_bucket set used = used - ?, overage = overage - ?
        where subject_id = ? and feature = ? and kind = 'allowance' and period_end = ?`,
      [usage.amount, usage.overage, usage.subject_id, usage.feature, usage.period_end],
    );
    await exec(
      em,
      `update credit_bucket b set spent = b.spent - v.amount
         from jsonb_to_recordset(?::jsonb) as v(bucket text, amount bigint)
        where b.id = v.bucket and b.voided_at is null and (b.expires_at is null or b.expires_at > ?)`,
      [JSON.stringify(usage.sources), now],
    );
    await exec(em, 'update usage_record set refunded_at = ? where id = ?', [now, usageId]);
    return {
      result: 'ok',
      subjectId: usage.subject_id,
      feature: usage.feature,
      overage: Number(usage.overage),
    };
  },

  /** Adds a grant to the subject's buckets. */
  async createGrant(
    em: EntityManager,
    subject: Subject,
    grant: {
      feature: string;
      amount: number;
      priority: number;
      expiresAt: Date | null;
      description: string | null;
    },
    now: Date,
  ): Promise<CreditGrant> {
    const [row] = await exec<GrantRow>(
      em,
      `insert into credit_bucket
         (id, app_id, subject_id, customer_id, organization_id, feature, kind, amount, priority, expires_at,
          description, created_at)
       values (?, ?, ?, ?, ?, ?, 'grant', ?, ?, ?, ?, ?)
       returning ${GRANT_COLUMNS}`,
      [
        newId('grant'),
        subject.appId,
        subject.subjectId,
        subject.organizationId === null ? subject.customerId : null,
        subject.organizationId,
        grant.feature,
        grant.amount,
        grant.priority,
        grant.expiresAt,
        grant.description,
        now,
      ],
    );
    return grantOf(row!, now);
  },

  /** Voids a grant of the app: its unspent part stops paying at once. */
  async voidGrant(
    em: EntityManager,
    appId: string,
    grantId: string,
    now: Date,
  ): Promise<
    | { readonly result: 'missing' }
    | { readonly result: 'voided' }
    | { readonly result: 'ok'; readonly grant: CreditGrant }
  > {
    const [row] = await exec<GrantRow>(
      em,
      `select ${GRANT_COLUMNS} from credit_bucket where id = ? and app_id = ? and kind = 'grant' for update`,
      [grantId, appId],
    );
    if (!row) return { result: 'missing' };
    if (row.voided_at !== null) return { result: 'voided' };
    const [voided] = await exec<GrantRow>(
      em,
      `update credit_bucket set voided_at = ? where id = ? returning ${GRANT_COLUMNS}`,
      [now, grantId],
    );
    return { result: 'ok', grant: grantOf(voided!, now) };
  },

  /** The subject's grants, newest first (voided and expired ones included). */
  async listGrants(em: EntityManager, subjectId: string, now: Date): Promise<CreditGrant[]> {
    const rows = await exec<GrantRow>(
      em,
      `select ${GRANT_COLUMNS} from credit_bucket
        where subject_id = ? and kind = 'grant' order by created_at desc, id desc limit 1000`,
      [subjectId],
    );
    return rows.map((row) => grantOf(row, now));
  },
};

function grantOf(row: GrantRow, now: Date): CreditGrant {
  const active = row.voided_at === null && (row.expires_at === null || row.expires_at > now.getTime());
  return {
    id: row.id,
    customerId: row.customer_id,
    organizationId: row.organization_id,
    feature: row.feature,
    amount: Number(row.amount),
    remaining: active ? Math.max(0, Number(row.amount) - Number(row.spent)) : 0,
    priority: row.priority,
    expiresAt: row.expires_at === null ? null : new Date(row.expires_at),
    description: row.description,
    voidedAt: row.voided_at === null ? null : new Date(row.voided_at),
    createdAt: new Date(row.created_at),
  };
}
