import type { TriggerDef } from '@mikro-orm/core';
import { CHANGES_CHANNEL } from './change-feed.js';

/**
 * Row triggers that announce committed changes on `tollgate_changes` (see change-feed.ts) for the
 * in-process caches: entitlements (subscription, plan) and credentials (session, organization_member).
 * pg_notify belongs to the writing transaction: delivered on commit, dropped on rollback, whoever
 * wrote the row (webhook handler, admin operation, a script, a cascade delete).
 */
function notifyTrigger(fields: (row: 'old' | 'new') => string, events: TriggerDef['events']): TriggerDef {
  const notify = (row: 'old' | 'new') =>
    `perform pg_notify('${CHANGES_CHANNEL}', json_build_object(${fields(row)})::text);`;
  return {
    name: 'changes_notify',
    timing: 'after',
    events,
    forEach: 'row',
    body: [
      `if tg_op <> 'INSERT' then ${notify('old')} end if;`,
      `if tg_op <> 'DELETE' then ${notify('new')} end if;`,
      'return null;',
    ].join('\n'),
  };
}

export const SUBSCRIPTION_CHANGES_TRIGGER = notifyTrigger(
  (r) =>
    `'t', 'subscription', 'app', ${r}.app_id, 'customer', ${r}.customer_id, 'organization', ${r}.organization_id`,
  ['insert', 'update', 'delete'],
);

export const PLAN_CHANGES_TRIGGER = notifyTrigger(
  (r) => `'t', 'plan', 'app', ${r}.app_id`,
  ['insert', 'update', 'delete'],
);

/** A new session was never cached, so only updates (revocation) and deletes matter. */
export const SESSION_CHANGES_TRIGGER = notifyTrigger(
  (r) => `'t', 'session', 'id', ${r}.id`,
  ['update', 'delete'],
);

export const MEMBER_CHANGES_TRIGGER = notifyTrigger(
  (r) => `'t', 'member', 'organization', ${r}.organization_id, 'customer', ${r}.customer_id`,
  ['insert', 'update', 'delete'],
);
