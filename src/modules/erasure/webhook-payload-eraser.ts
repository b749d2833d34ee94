import type { EntityManager } from '@mikro-orm/postgresql';
import type { OutboundEvents } from '../webhooks/outbound-events.js';
import type { CustomerDataEraser, ErasedCustomer } from './customer-erasure.service.js';

/**
 * A customer's deletion and the app's outbound webhooks. The stored events whose subjects (the ids
 * recorded when each was written: `webhook_event.subject_ids`) include the customer are deleted, with
 * their deliveries and attempts (an attempt keeps the first characters of the app's answer, which may
 * echo the payload); a delivery still pending is dropped with its event, since the app is told of the
 * deletion itself. Selected by id alone: no other customer's event is touched, whatever its text holds.
 * Then `customer.deleted` (`data: { id }`) is recorded in the same transaction: the app hears of the
 * deletion if and only if it happened.
 */
export class WebhookPayloadEraser implements CustomerDataEraser {
  constructor(private readonly events: OutboundEvents) {}

  async eraseCustomer(em: EntityManager, customer: ErasedCustomer): Promise<void> {
    await em
      .getConnection()
      .execute(
        'delete from webhook_event where app_id = ? and subject_ids @> ?::jsonb',
        [customer.appId, JSON.stringify([customer.customerId])],
        'run',
        em.getTransactionContext(),
      );
    await this.events.record(em, customer.appId, 'customer.deleted', { id: customer.customerId }, [
      customer.customerId,
    ]);
  }
}
