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

/** Endpoints of the app that take `type`: enabled, subscribed to it or to everything (`events` empty). */
const ENDPOINTS_FOR = `
  select id from webhook_endpoint
   where app_id = ? and enabled and (events = '[]'::jsonb or events @> ?::jsonb)`;

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
    const connection = em.getConnection();
    const context = em.getTransactionContext();
    const endpoints = await connection.execute<{ id: string }[]>(
      ENDPOINTS_FOR,
      [appId, JSON.stringify([type])],
      'all',
      context,
    );
    if (endpoints.length === 0) return null;
    const now = this.clock.now();
    const eventId = newId('msg');
    const body = JSON.stringify({ type, timestamp: now.toISOString(), data });
    await connection.execute(
      'insert into webhook_event (id, app_id, type, body, created_at) values (?, ?, ?, ?, ?)',
      [eventId, appId, type, body, now],
      'run',
      context,
    );
    const deliveries = endpoints.map((endpoint) => ({ id: newId('whd'), endpointId: endpoint.id }));
    await connection.execute(
      `insert into webhook_delivery (id, event_id, endpoint_id, status, attempts, next_attempt_at, created_at, updated_at)
       values ${deliveries.map(() => "(?, ?, ?, 'pending', 0, ?, ?, ?)").join(', ')}`,
      deliveries.flatMap((d) => [d.id, eventId, d.endpointId, now, now, now]),
      'run',
      context,
    );
    await this.jobs.enqueue<DeliveryJob>(
      em,
      DELIVERY_QUEUE,
      deliveries.map((d) => ({ data: { deliveryId: d.id, attempt: 0 } })),
    );
    return eventId;
  }
}
