import type { EntityManager } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { newId } from '../../core/ids.js';
import type { JobQueue } from '../../infra/job-queue.js';
import type { Logger } from '../../infra/logger.js';
import type { WebhookEventType } from './webhook-event-types.js';

/** The job queue that carries deliveries (src/infra/job-queue.ts). */
export const DELIVERY_QUEUE = 'webhook-delivery';

/**
 * One attempt of each of some deliveries; `attempt` is the number of attempts each has made already, so a
 * stale or duplicate job does nothing. (`deliveryId`: the one delivery of a job enqueued by an earlier
 * version.)
 */
export interface DeliveryJob {
  readonly deliveryIds?: readonly string[];
  readonly deliveryId?: string;
  readonly attempt: number;
  /** A replay asked for by the app: one attempt, no schedule after it. */
  readonly manual?: boolean;
}

/**
 * An event to record: its type, the object it carries (as the REST API shows it), and its subjects: the
 * ids of the customers and organizations it concerns, which a customer's erasure selects by.
 */
export interface PlannedEvent {
  readonly type: WebhookEventType;
  readonly data: object;
  readonly subjects: readonly string[];
}

/** Deliveries one job names at most. */
const DELIVERIES_PER_JOB = 50;

/** The jobs that make attempt `attempt` of each of `deliveryIds`, a batch of them per job. */
export function deliveryJobs(deliveryIds: readonly string[], attempt: number): { data: DeliveryJob }[] {
  const jobs = [];
  for (let i = 0; i < deliveryIds.length; i += DELIVERIES_PER_JOB) {
    jobs.push({ data: { deliveryIds: deliveryIds.slice(i, i + DELIVERIES_PER_JOB), attempt } });
  }
  return jobs;
}
/**
 * How long announced deliveries wait to be gathered with others into one job insert: under load one
 * insert serves many requests' changes; the delay is a small part of a webhook's usual latency.
 */
const ANNOUNCE_AFTER_MS = 10;

/**
 * SQL: whether the endpoint `endpoint` (a table alias) takes at least one of `types` (a `text[]`
 * expression): subscribed to everything (no types listed) or to one of them.
 */
export function takesAnySql(endpoint: string, types: string): string {
  return `(${endpoint}.events = '[]'::jsonb or jsonb_exists_any(${endpoint}.events, ${types}))`;
}

/**
 * SQL: the enabled endpoints of the app `appId` that take an event of type `type` (both SQL expressions),
 * each with its rank, which names its delivery of the event (`deliveryIdSql`). The one rule of who
 * receives what, for `record` and for the Stripe receiver's one-statement path.
 */
export function endpointsTakingSql(appId: string, type: string): string {
  return `select p.id, row_number() over (order by p.id) as n from webhook_endpoint p
           where p.app_id = ${appId} and p.enabled and ${takesAnySql('p', `array[${type}]`)}`;
}

/** SQL: the id of the delivery of the event `eventId` (`msg_…`) to the endpoint ranked `rank`. */
export function deliveryIdSql(eventId: string, rank: string): string {
  return `'whd_' || substr(${eventId}, 5) || '_' || ${rank}`;
}

/**
 * SQL: the body of a CTE that writes a pending delivery of each event of `events` (a CTE of the events
 * written, with `id`, `app_id`, `type` and `created_at`) to each endpoint taking it, returning their ids.
 * The statements that write events with a change share it (the Stripe receiver's functions).
 */
export function deliveriesOfEventsSql(events: string): string {
  return `insert into webhook_delivery (id, event_id, endpoint_id, status, attempts, next_attempt_at, created_at, updated_at)
    select ${deliveryIdSql('ev.id', 't.n')}, ev.id, t.id, 'pending', 0, ev.created_at, ev.created_at, ev.created_at
      from ${events} ev cross join lateral (${endpointsTakingSql('ev.app_id', 'ev.type')}) t
    returning id`;
}

/**
 * One round trip: the app's endpoints that take the type, the event when there is at least one, and a
 * delivery for each.
 */
const RECORD_EVENT = `
  with targets as (${endpointsTakingSql('?', '?::text')}),
  event as (
    insert into webhook_event (id, app_id, type, body, subject_ids, created_at)
    select ?, ?, ?, ?, ?::jsonb, ? where exists (select 1 from targets)
    returning id, created_at
  )
  insert into webhook_delivery (id, event_id, endpoint_id, status, attempts, next_attempt_at, created_at, updated_at)
  select ${deliveryIdSql('e.id', 't.n')}, e.id, t.id, 'pending', 0, e.created_at, e.created_at, e.created_at
    from targets t, event e
  returning id`;

/** An event and its one delivery to the endpoint named, whatever types the endpoint takes. */
const RECORD_EVENT_FOR_ENDPOINT = `
  with event as (
    insert into webhook_event (id, app_id, type, body, subject_ids, created_at)
    values (?, ?, ?, ?, ?::jsonb, ?)
    returning id, created_at
  )
  insert into webhook_delivery (id, event_id, endpoint_id, status, attempts, next_attempt_at, created_at, updated_at)
  select ${deliveryIdSql('e.id', '1')}, e.id, ?, 'pending', 0, e.created_at, e.created_at, e.created_at
    from event e
  returning id`;

/**
 * The outbox. `record` is called inside the transaction of the change that causes the event, so the
 * event, its deliveries and their jobs are committed with the change or not at all; delivery happens
 * after the commit, on any instance (src/modules/webhooks/webhook-dispatcher.ts).
 */
export class OutboundEvents {
  /** Deliveries committed but not yet announced to the job queue (see `announce`). */
  #unannounced: string[] = [];
  #announcing: Promise<void> | undefined;

  constructor(
    private readonly jobs: JobQueue,
    private readonly clock: Clock,
    private readonly logger?: Logger,
  ) {}

  /** Whether any enabled endpoint of the app would take one of `types` (skips building payloads nobody gets). */
  async wants(em: EntityManager, appId: string, types: readonly WebhookEventType[]): Promise<boolean> {
    const rows = await em.getConnection().execute<{ found: boolean }[]>(
      `select exists (select 1 from webhook_endpoint e
                       where e.app_id = ? and e.enabled and ${takesAnySql('e', '?::text[]')}) as found`,
      [appId, `{${types.join(',')}}`],
      'all',
      em.getTransactionContext(),
    );
    return rows[0]?.found === true;
  }

  /**
   * Records that `type` happened to `appId` with `data` (the object as the REST API shows it) for every
   * endpoint of the app that takes it; nothing when there is none. `subjects`: the ids of the customers
   * and organizations it concerns (none for an app-wide event such as a plan's). Returns the event id
   * (`webhook-id`).
   */
  async record(
    em: EntityManager,
    appId: string,
    type: WebhookEventType,
    data: object,
    subjects: readonly string[],
  ): Promise<string | null> {
    if (!em.isInTransaction()) {
      throw new Error('events are recorded inside the transaction of the change that causes them');
    }
    const prepared = this.prepare([{ type, data, subjects }]);
    const deliveries = await em
      .getConnection()
      .execute<{ id: string }[]>(
        RECORD_EVENT,
        [appId, type, prepared.ids[0], appId, type, prepared.bodies[0], prepared.subjects[0], prepared.at],
        'all',
        em.getTransactionContext(),
      );
    if (deliveries.length === 0) return null;
    await this.jobs.enqueue<DeliveryJob>(
      em,
      DELIVERY_QUEUE,
      deliveryJobs(
        deliveries.map((d) => d.id),
        0,
      ),
    );
    return prepared.ids[0]!;
  }

  /**
   * Records `type` for the one endpoint `endpointId` of `appId` (a test event the operator asks for),
   * delivered as every event is: same body, signature, job queue and retries. Returns the delivery id.
   */
  async recordForEndpoint(
    em: EntityManager,
    appId: string,
    endpointId: string,
    type: WebhookEventType,
    data: object,
  ): Promise<string> {
    if (!em.isInTransaction()) throw new Error('events are recorded inside a transaction');
    const prepared = this.prepare([{ type, data, subjects: [] }]);
    const [delivery] = await em
      .getConnection()
      .execute<{ id: string }[]>(
        RECORD_EVENT_FOR_ENDPOINT,
        [prepared.ids[0], appId, type, prepared.bodies[0], prepared.subjects[0], prepared.at, endpointId],
        'all',
        em.getTransactionContext(),
      );
    await this.jobs.enqueue<DeliveryJob>(em, DELIVERY_QUEUE, deliveryJobs([delivery!.id], 0));
    return delivery!.id;
  }

  /**
   * Gives each event its id (the `webhook-id`) and its body `{ type, timestamp, data }`, frozen now, and
   * its subjects (a JSON array), for a statement that writes them with the change that causes them (see
   * `announce`).
   */
  prepare(events: readonly PlannedEvent[]): {
    ids: string[];
    types: string[];
    bodies: string[];
    subjects: string[];
    at: Date;
  } {
    const at = this.clock.now();
    const timestamp = at.toISOString();
    return {
      ids: events.map(() => newId('msg')),
      types: events.map((e) => e.type),
      bodies: events.map((e) => JSON.stringify({ type: e.type, timestamp, data: e.data })),
      subjects: events.map((e) => JSON.stringify([...new Set(e.subjects)].sort())),
      at,
    };
  }

  /**
   * Hands deliveries written by a statement that has committed (outside any transaction, so without a job
   * of their own) to the job queue. The deliveries of concurrent requests are gathered into one job; the
   * caller does not wait. Should the process die first, or the queue refuse, the dispatcher's sweep finds
   * them still pending and due (src/modules/webhooks/webhook-dispatcher.ts).
   */
  announce(deliveryIds: readonly string[]): void {
    if (deliveryIds.length === 0) return;
    this.#unannounced.push(...deliveryIds);
    this.#schedule();
  }

  #schedule(): void {
    this.#announcing ??= new Promise<void>((resolve) => setTimeout(resolve, ANNOUNCE_AFTER_MS)).then(() =>
      this.#flush(),
    );
  }

  /** Resolves when every delivery announced so far has been handed to the job queue (or failed to be). */
  async settled(): Promise<void> {
    while (this.#announcing) await this.#announcing;
  }

  async #flush(): Promise<void> {
    const ids = this.#unannounced;
    this.#unannounced = [];
    try {
      await this.jobs.enqueueNow(DELIVERY_QUEUE, deliveryJobs(ids, 0));
    } catch (error) {
      this.logger?.warn(
        { err: error, deliveries: ids.length },
        'webhook deliveries not announced to the job queue; the sweep sends them',
      );
    } finally {
      this.#announcing = undefined;
      if (this.#unannounced.length > 0) this.#schedule();
    }
  }
}
