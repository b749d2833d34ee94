import type { EntityManager } from '@mikro-orm/postgresql';
import type { OutboundEvents } from '../webhooks/outbound-events.js';
import type { CustomerDataEraser, ErasedCustomer } from './customer-erasure.service.js';

/**
 * A customer's deletion and the app's outbound webhooks. Stored events whose payload names the customer
 * (its id, e-mail or name) are deleted, with their deliveries and attempts (an attempt keeps the first
 * characters of the app's answer, which may echo the payload); a delivery still pending is dropped with
 * its event, since the app is told of the deletion itself. Then `customer.deleted` (`data: { id }`) is
 * recorded in the same transaction: the app hears of the deletion if and only if it happened.
 */
export class WebhookPayloadEraser implements CustomerDataEraser {
  constructor(private readonly events: OutboundEvents) {}

  async eraseCustomer(em: EntityManager, customer: ErasedCustomer): Promise<void> {
    const needles = [customer.customerId.toLowerCase(), customer.email.toLowerCase()];
    if (customer.name) needles.push(JSON.stringify(customer.name.toLowerCase()).slice(1, -1));
    await em.getConnection().execute(
      `delete from webhook_event
        where app_id = ?
          and exists (select 1 from jsonb_array_elements_text(?::jsonb) as n(needle)
                       where strpos(lower(body), needle) > 0)`,
      [customer.appId, JSON.stringify(needles)],
      'all',
      em.getTransactionContext(),
    );
    await this.events.record(em, customer.appId, 'customer.deleted', { id: customer.customerId });
  }
}
