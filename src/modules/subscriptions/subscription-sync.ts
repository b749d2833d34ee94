import type { EntityManager } from '@mikro-orm/core';
import type { ProviderSubscription } from '../payments/payment-provider.js';
import { Plan } from '../plans/plan.entity.js';
import type { Subscription } from './subscription.entity.js';
import { statusFromProvider } from './subscription-transitions.js';

/**
 * Copies Stripe's state of a subscription onto Tollgate's row and remembers the event it came from, so
 * an older event arriving later is recognised and ignored. A price change at Stripe moves the
 * subscription to the app's plan with that price, when there is one. Needs `plan` loaded.
 */
export async function applyProviderState(
  em: EntityManager,
  subscription: Subscription,
  remote: ProviderSubscription,
  eventCreated: number,
): Promise<void> {
  subscription.status = statusFromProvider(remote);
  subscription.stripeCustomerId = remote.customerId;
  subscription.currentPeriodEnd = remote.currentPeriodEnd;
  subscription.cancelAtPeriodEnd = remote.cancelAtPeriodEnd;
  subscription.trialEnd = remote.trialEnd;
  subscription.canceledAt = remote.canceledAt;
  subscription.providerEventCreated = Math.max(subscription.providerEventCreated, eventCreated);
  if (remote.priceId && remote.priceId !== subscription.plan.stripePriceId) {
    const plan = await em.findOne(Plan, { app: subscription.app.id, stripePriceId: remote.priceId });
    if (plan) subscription.plan = plan;
  }
}

/** What `applyNewerProviderEvent` did with an event. */
export type ProviderEventOutcome =
  /** Recorded and applied. */
  | 'applied'
  /** Recorded (or recorded before: a duplicate) and rightly not applied: an older event. */
  | 'skipped'
  /** Neither recorded nor applied: Tollgate has no row of this subscription; the caller may import it. */
  | 'unknown'
  /**
   * Neither recorded nor applied: the subscription's newest event is of the same second, so `created`
   * cannot order them; the caller reads the state from the provider under the row lock instead.
   */
  | 'same_second'
  /**
   * Neither recorded nor applied: the subscription's app has webhook endpoints, so the change must be
   * made in a transaction that also records its outbound events; the caller takes that path.
   */
  | 'record_events';

/**
 * Records a subscription event's id and applies the provider's state in one statement and one round trip
 * (the common case of a webhook: a newer event, or a duplicate). The subscription row is locked first, so
 * concurrent deliveries for one subscription take their turns, and a duplicate delivered concurrently
 * waits for the first one's commit, then finds its id recorded (exactly-once by `processed_event`'s key).
 * The same rules as `applyProviderState`: an older event is recorded and ignored, a price change moves the
 * subscription to the app's plan with that price when there is one.
 */
export async function applyNewerProviderEvent(
  em: EntityManager,
  event: { readonly id: string; readonly type: string; readonly created: number },
  remote: ProviderSubscription,
): Promise<ProviderEventOutcome> {
  const row = await runApplyNewerEvent(em, event, remote, true);
  if (!row.known) return 'unknown';
  if (row.applied) return 'applied';
  if (row.wants_events && !row.same_second) return 'record_events';
  if (row.recorded || !row.same_second) return 'skipped';
  // An id already recorded needs no second look, whatever its second.
  return row.seen ? 'skipped' : 'same_second';
}

/** The subscription's rows before and after an applied event, as stored (for its outbound events). */
export interface AppliedRows {
  readonly before: SubscriptionRow;
  readonly after: SubscriptionRow;
}

/**
 * `applyNewerProviderEvent` for an app with webhook endpoints, inside the caller's transaction `em`: the
 * same statement, applying whatever the app wants, and answering with the row before and after so the
 * events can be recorded in the same transaction. `same_second`: nothing was done (see above).
 */
export async function applyNewerProviderEventReturningRows(
  em: EntityManager,
  event: { readonly id: string; readonly type: string; readonly created: number },
  remote: ProviderSubscription,
): Promise<AppliedRows | 'skipped' | 'same_second'> {
  const row = await runApplyNewerEvent(em, event, remote, false);
  if (row.applied) {
    return {
      before: { ...row.before_row!, plan: row.before_plan! },
      after: { ...row.after_row!, plan: row.after_plan! },
    };
  }
  if (row.recorded || !row.same_second || row.seen) return 'skipped';
  return 'same_second';
}

/** A subscription row as PostgreSQL's `row_to_json` gives it, with its plan's public id and name. */
export interface SubscriptionRow {
  readonly id: string;
  readonly app_id: string;
  readonly customer_id: string | null;
  readonly organization_id: string | null;
  readonly plan_id: string;
  readonly status: string;
  readonly current_period_end: string | null;
  readonly cancel_at_period_end: boolean;
  readonly trial_end: string | null;
  readonly canceled_at: string | null;
  readonly metadata: Record<string, unknown> | null;
  readonly created_at: string;
  readonly updated_at: string;
  readonly plan: { readonly id: string; readonly name: string };
}

interface ApplyResult {
  known: boolean;
  recorded: boolean;
  applied: boolean;
  same_second: boolean;
  seen: boolean;
  wants_events: boolean;
  before_row: Omit<SubscriptionRow, 'plan'> | null;
  after_row: Omit<SubscriptionRow, 'plan'> | null;
  before_plan: SubscriptionRow['plan'] | null;
  after_plan: SubscriptionRow['plan'] | null;
}

async function runApplyNewerEvent(
  em: EntityManager,
  event: { readonly id: string; readonly type: string; readonly created: number },
  remote: ProviderSubscription,
  gate: boolean,
): Promise<ApplyResult> {
  const rows = await em
    .getConnection()
    .execute<ApplyResult[]>(
      APPLY_NEWER_EVENT,
      [
        remote.id,
        event.created,
        event.id,
        event.type,
        gate,
        statusFromProvider(remote),
        remote.customerId,
        remote.currentPeriodEnd,
        remote.cancelAtPeriodEnd,
        remote.trialEnd,
        remote.canceledAt,
        remote.priceId,
      ],
      'all',
      em.getTransactionContext(),
    );
  return rows[0]!;
}

/**
 * `target` locks the row (no key update: foreign keys pointing at it are not blocked) and tells whether its
 * app has enabled webhook endpoints (with `gate`, nothing is then done here: see 'record_events'; without,
 * the rows before and after come back for the events); `recorded` inserts
 * the id when the row exists, unless the event is of the subscription's newest second; `applied` copies the state onto the row
 * when the id was new and the event is newer (re-checked on the row's latest version after a lock wait).
 * `seen` tells a same-second duplicate already recorded from one that is not.
 */
const APPLY_NEWER_EVENT = `
  with target as (
    select t.*,
           exists (select 1 from webhook_endpoint e where e.app_id = t.app_id and e.enabled) as wants_events
      from subscription t where t.stripe_subscription_id = ? for no key update of t
  ), params as (
    select ?::bigint as created, ?::text as event_id, ?::text as event_type, ?::boolean as gate
  ), recorded as (
    insert into processed_event (id, type)
    select event_id, event_type from params
     where exists (select 1 from target)
       and not exists (select 1 from target, params where target.provider_event_created = params.created)
       and not exists (select 1 from target, params where params.gate and target.wants_events)
    on conflict (id) do nothing
    returning id
  ), applied as (
    update subscription s
       set status = ?, stripe_customer_id = ?, current_period_end = ?, cancel_at_period_end = ?,
           trial_end = ?, canceled_at = ?, provider_event_created = params.created, updated_at = now(),
           plan_id = coalesce(
             (select p.id from plan p, (select ?::text as price) r
               where r.price is not null
                 and r.price is distinct from (select c.stripe_price_id from plan c where c.id = s.plan_id)
                 and p.app_id = s.app_id and p.stripe_price_id = r.price
               limit 1),
             s.plan_id)
      from target, params
     where s.id = target.id and s.provider_event_created < params.created
       and exists (select 1 from recorded)
    returning s.*
  ), want_rows as (
    select not gate as yes from params
  )
  select exists (select 1 from target) as known,
         exists (select 1 from recorded) as recorded,
         exists (select 1 from applied) as applied,
         exists (select 1 from target, params where target.provider_event_created = params.created) as same_second,
         exists (select 1 from processed_event e, params where e.id = params.event_id) as seen,
         exists (select 1 from target where target.wants_events) as wants_events,
         case when (select yes from want_rows) then (select row_to_json(t) from target t) end as before_row,
         case when (select yes from want_rows) then (select row_to_json(a) from applied a) end as after_row,
         case when (select yes from want_rows) then
           (select json_build_object('id', p.slug, 'name', p.name) from plan p, target t where p.id = t.plan_id) end
           as before_plan,
         case when (select yes from want_rows) then
           (select json_build_object('id', p.slug, 'name', p.name) from plan p, applied a where p.id = a.plan_id) end
           as after_plan`;
