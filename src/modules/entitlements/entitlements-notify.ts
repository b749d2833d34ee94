import type { TriggerDef } from '@mikro-orm/core';

/**
 * Entitlement change notifications. Writes to `subscription` and `plan` call
 * `pg_notify('tollgate_entitlements', …)` from a trigger, so the notice belongs to the writing
 * transaction: every Tollgate instance receives it exactly when the change commits, never for a
 * rollback, whoever wrote the row (webhook handler, admin operation, a script).
 *
 * Payload: `{"app": …}` (a plan changed: every context of the app) or
 * `{"app": …, "customer": …, "organization": …}` (a subscription of that context changed).
 */
export const ENTITLEMENTS_CHANNEL = 'tollgate_entitlements';

const notifyBoth = (fields: (row: 'old' | 'new') => string) =>
  [
    `if tg_op <> 'INSERT' then perform pg_notify('${ENTITLEMENTS_CHANNEL}', json_build_object(${fields('old')})::text); end if;`,
    `if tg_op <> 'DELETE' then perform pg_notify('${ENTITLEMENTS_CHANNEL}', json_build_object(${fields('new')})::text); end if;`,
    'return null;',
  ].join('\n');

export const SUBSCRIPTION_NOTIFY_TRIGGER: TriggerDef = {
  name: 'entitlements_notify',
  timing: 'after',
  events: ['insert', 'update', 'delete'],
  forEach: 'row',
  body: notifyBoth(
    (row) => `'app', ${row}.app_id, 'customer', ${row}.customer_id, 'organization', ${row}.organization_id`,
  ),
};

export const PLAN_NOTIFY_TRIGGER: TriggerDef = {
  name: 'entitlements_notify',
  timing: 'after',
  events: ['insert', 'update', 'delete'],
  forEach: 'row',
  body: notifyBoth((row) => `'app', ${row}.app_id`),
};
