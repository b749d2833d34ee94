import type { EntityManager } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { newId } from '../../core/ids.js';
import type { JobQueue } from '../../infra/job-queue.js';
import type { WebhookEventType } from './webhook-event-types.js';

/** The job queue that carries deliveries (src/infra/job-queue.ts). */
export const DELIVERY_QUEUE = 'webhook-delivery';

/** One attempt of one delivery; `attempt` is the number of attempts already made, so a stale job does nothing. */
export interface DeliveryJob {
  readonly deliveryId: string;
  readonly attempt: number;
  /** A replay asked for by the app: one attempt, no schedule after it. */
  readonly manual?: boolean;
}

/**
 * One round trip: the app's endpoints that take the type (enabled, subscribed to it or to everything),
 * the event when there is at least one, and a delivery for each (its id: the event's random part and the
 * endpoint's rank).
 */
const RECORD_EVENT = `
  with targets as (
    select id, row_number() over (order by id) as n from webhook_endpoint
     where app_id = ? and enabled and (events = '[]'::jsonb or events @> ?::jsonb)
  ), event as (
    insert into webhook_event (id, app_id, type, body, created_at)
    select ?, ?, ?, ?, ? where exists (select 1 from targets)
    returning id, created_at
  )
  insert into webhook_delivery (id, event_id, endpoint_id, status, attempts, next_attempt_at, created_at, updated_at)
  select 'whd_' || ? || '_' || t.n, e.id, t.id, 'pending', 0, e.created_at, e.created_at, e.created_at
    from targets t, event e
  returning id`;

/**
 * The outbox. `record` is called inside the transaction of the change that causes the event, so the
 * event, its deliveries and their jobs are committed with the change or not at all; delivery happens
 * after the commit, on any instance (src/modules/webhooks/webhook-dispatcher.ts).
 */
export class OutboundEvents {
  constructor(
    private readonly jobs: JobQueue,
    private readonly clock: Clock,
  ) {}

  /** Whether any enabled endpoint of the app would take one of `types` (skips building payloads nobody gets). */
  async wants(em: EntityManager, appId: string, types: readonly WebhookEventType[]): Promise<boolean> {
    const rows = await em.getConnection().execute<{ found: boolean }[]>(
      `select exists (select 1 from webhook_endpoint where app_id = ? and enabled
           and (events = '[]'::jsonb or jsonb_exists_any(events, ?::text[]))) as found`,
      [appId, `{${types.join(',')}}`],
      'all',
      em.getTransactionContext(),
    );
    return rows[0]?.found === true;
  }

  /**
   * Records that `type` happened to `appId` with `data` (the object as the REST API shows it) for every
   * endpoint of the app that takes it; nothing when there is none. Returns the event id (`webhook-id`).
   */
  async record(
    em: EntityManager,
    appId: string,
    type: WebhookEventType,
    data: object,
  ): Promise<string | null> {
    if (!em.isInTransaction()) {
      throw new Error('events are recorded inside the transaction of the change that causes them');
    }
    const now = this.clock.now();
    const eventId = newId('msg');
    const body = JSON.stringify({ type, timestamp: now.toISOString(), data });
    const deliveries = await em
      .getConnection()
      .execute<{ id: string }[]>(
        RECORD_EVENT,
        [appId, JSON.stringify([type]), eventId, appId, type, body, now, eventId.slice('msg_'.length)],
        'all',
        em.getTransactionContext(),
      );
    if (deliveries.length === 0) return null;
    await this.jobs.enqueue<DeliveryJob>(
      em,
      DELIVERY_QUEUE,
      deliveries.map((d) => ({ data: { deliveryId: d.id, attempt: 0 } })),
    );
    return eventId;
  }
}
