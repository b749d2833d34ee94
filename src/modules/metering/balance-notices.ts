import type { TriggerDef } from '@mikro-orm/core';

/**
 * The channel of balance notices: a subject id (or several, space-separated) whose buckets changed. The
 * database's triggers send it for grants, voids and deletions (BALANCE_TRIGGERS); the instance that
 * consumes or refunds sends it right after its commit (`BalanceCache.changed`).
 */
export const BALANCES_CHANNEL = 'tollgate_balances';

/** A bucket's fields other than its counters (`spent`, `used`, `overage`), which consumptions move. */
const FIELDS = [
  'id',
  'app_id',
  'subject_id',
  'customer_id',
  'organization_id',
  'feature',
  'kind',
  'amount',
  'priority',
  'period_end',
  'expires_at',
  'voided_at',
  'created_at',
];

const notice = (row: 'old' | 'new') =>
  `perform pg_notify('${BALANCES_CHANNEL}', ${row}.subject_id); return null;`;

/**
 * Row triggers on `credit_bucket` announcing what consumptions do not: a grant added, a bucket deleted
 * (erasure, an app's removal) and a change of any field but the counters. Consumptions and refunds move
 * only the counters (and insert allowance and rollover rows, which a balance read counts before they
 * exist), and a NOTIFY in their transaction would make every consumption's commit wait for the previous
 * one's (PostgreSQL serializes notifying commits, WAL flush included): the instance that made the change
 * announces it right after the commit instead, before it answers. A hand-written UPDATE of the counters
 * is not announced (balance-cache.ts: BALANCE_MAX_AGE_MS bounds it).
 */
export const BALANCE_TRIGGERS: Record<'insert' | 'delete' | 'update', TriggerDef> = {
  insert: {
    name: 'balance_notice_insert',
    timing: 'after',
    events: ['insert'],
    forEach: 'row',
    body: `if new.kind <> 'grant' then return null; end if; ${notice('new')}`,
  },
  delete: {
    name: 'balance_notice_delete',
    timing: 'after',
    events: ['delete'],
    forEach: 'row',
    body: notice('old'),
  },
  update: {
    name: 'balance_notice_update',
    timing: 'after',
    events: ['update'],
    forEach: 'row',
    // Conditions in the body, not a WHEN clause: PostgreSQL rewrites a WHEN clause's text, and the
    // schema check would then never find it equal to this one.
    body: `if ${FIELDS.map((f) => `new.${f} is not distinct from old.${f}`).join(' and ')} then return null; end if;
if new.subject_id is distinct from old.subject_id then perform pg_notify('${BALANCES_CHANNEL}', old.subject_id); end if; ${notice('new')}`,
  },
};
