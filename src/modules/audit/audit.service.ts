import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { currentAuditRequest } from '../../core/audit-context.js';
import type { Clock } from '../../core/clock.js';
import { ValidationError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { type Principal, requireAdmin } from '../../core/principal.js';
import { idSchema, parseInput } from '../../core/validation.js';
import type { JobQueue } from '../../infra/job-queue.js';
import type { Logger } from '../../infra/logger.js';
import type { CustomerDataEraser, ErasedCustomer } from '../erasure/customer-erasure.service.js';
import { AuditEvent } from './audit-event.entity.js';

const RETENTION_QUEUE = 'audit-retention';
/** Rows deleted per statement, so a long-neglected log is trimmed without one huge transaction. */
const PURGE_BATCH = 5000;

const listSchema = z.strictObject({
  appId: idSchema.optional(),
  first: z.number().int().min(1, 'must be at least 1').max(100, 'must be at most 100').default(50),
  after: z.string().max(200).optional(),
  actorId: idSchema.optional(),
  action: z.string().min(1).max(100).optional(),
  targetId: idSchema.optional(),
  since: z.date().optional(),
  until: z.date().optional(),
});

export interface AuditPage {
  readonly events: AuditEvent[];
  /** Each event's cursor, for `after`. */
  readonly cursors: string[];
  readonly hasNextPage: boolean;
  readonly endCursor: string | null;
}

function encodeCursor(event: AuditEvent): string {
  return Buffer.from(JSON.stringify([event.at.toISOString(), event.id])).toString('base64url');
}

function decodeCursor(cursor: string): { at: Date; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    const date = new Date(at);
    if (typeof id !== 'string' || Number.isNaN(date.getTime())) throw new Error('bad cursor');
    return { at: date, id };
  } catch {
    throw ValidationError.forField('after', 'is not a cursor of this list');
  }
}

/**
 * The audit log: read by operators (and the admin token), newest first; trimmed to AUDIT_RETENTION_DAYS;
 * scrubbed of a customer's personal values when the customer is erased (the fact of each action stays).
 * Events are written by the unit of work (audit-trail.subscriber.ts), and by the erasure itself.
 */
export class AuditService implements CustomerDataEraser {
  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly retentionDays: number,
  ) {}

  /** A page of events matching the filters, newest first. */
  async listAuditEvents(principal: Principal, input: unknown): Promise<AuditPage> {
    requireAdmin(principal);
    const query = parseInput(listSchema, input);
    const where: Record<string, unknown>[] = [];
    if (query.appId !== undefined) where.push({ appId: query.appId });
    if (query.actorId !== undefined) where.push({ actorId: query.actorId });
    if (query.action !== undefined) where.push({ action: query.action });
    if (query.targetId !== undefined) where.push({ targetId: query.targetId });
    if (query.since !== undefined) where.push({ at: { $gte: query.since } });
    if (query.until !== undefined) where.push({ at: { $lt: query.until } });
    if (query.after !== undefined) {
      const { at, id } = decodeCursor(query.after);
      where.push({ $or: [{ at: { $lt: at } }, { at, id: { $lt: id } }] });
    }
    const rows = await this.orm.em.find(
      AuditEvent,
      { $and: where },
      { orderBy: { at: 'desc', id: 'desc' }, limit: query.first + 1 },
    );
    const events = rows.slice(0, query.first);
    const last = events[events.length - 1];
    return {
      events,
      cursors: events.map(encodeCursor),
      hasNextPage: rows.length > query.first,
      endCursor: last ? encodeCursor(last) : null,
    };
  }

  /**
   * The customer's personal values leave every event about it (its e-mail, name and metadata in a
   * customer's changes, and the like); the action, actor, target and time stay. Recorded as an event of
   * its own: the deletion, in the same transaction.
   */
  async eraseCustomer(em: EntityManager, customer: ErasedCustomer): Promise<void> {
    await em.getConnection().execute(
      `update audit_event set changes = (
          select coalesce(jsonb_object_agg(key, jsonb_build_object('before', case when value->'before' = 'null'::jsonb then 'null'::jsonb else '"[erased]"'::jsonb end,
                                                                     'after', case when value->'after' = 'null'::jsonb then 'null'::jsonb else '"[erased]"'::jsonb end)), '{}'::jsonb)
            from jsonb_each(changes))
        where customer_id = ? and changes is not null`,
      [customer.customerId],
      'run',
      em.getTransactionContext(),
    );
    const request = currentAuditRequest();
    if (request) {
      em.create(AuditEvent, {
        id: newId('aud'),
        at: this.clock.now(),
        action: 'customer.delete',
        targetId: customer.customerId,
        appId: customer.appId,
        actorType: request.actor.type,
        actorId: request.actor.id,
        actorEmail: request.actor.email,
        ip: request.ip,
        userAgent: request.userAgent,
        changes: null,
        customerId: customer.customerId,
      });
    }
  }

  /** Starts the hourly trim on the job queue (one run at a time across instances). */
  async start(jobs: JobQueue): Promise<void> {
    await jobs.define(RETENTION_QUEUE, { policy: 'exclusive', expireInSeconds: 3600, retryLimit: 0 });
    await jobs.work(RETENTION_QUEUE, {}, async () => {
      await this.purge();
    });
    await jobs.schedule(RETENTION_QUEUE, '17 * * * *');
  }

  /** Deletes the events older than the retention; how many. */
  async purge(): Promise<number> {
    const cutoff = new Date(this.clock.now().getTime() - this.retentionDays * 86_400_000);
    const connection = this.orm.em.getConnection();
    let purged = 0;
    for (;;) {
      const deleted = await connection.execute<{ id: string }[]>(
        `delete from audit_event where id in (select id from audit_event where at < ? limit ${PURGE_BATCH}) returning id`,
        [cutoff],
      );
      purged += deleted.length;
      if (deleted.length < PURGE_BATCH) break;
    }
    if (purged > 0)
      this.logger.info({ events: purged, retentionDays: this.retentionDays }, 'audit events purged');
    return purged;
  }
}
