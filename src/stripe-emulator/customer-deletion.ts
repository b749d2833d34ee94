import { customerOrFail } from './customers.js';
import type { Obj } from './parameters.js';
import type { Emulation } from './state.js';
import { endSubscription } from './subscriptions.js';

/**
 * `DELETE /v1/customers/:id`: Stripe cancels the customer's subscriptions at once and keeps only the
 * deleted object (`{ id, object, deleted: true }`).
 */
export function deleteCustomer(em: Emulation, id: string): Obj {
  const customer = customerOrFail(em, id);
  for (const subscription of Object.values(em.state.subscriptions)) {
    if (subscription.customer === id && subscription.status !== 'canceled') endSubscription(em, subscription);
  }
  for (const method of Object.values(em.state.paymentMethods)) {
    if (method.customer === id) method.customer = null;
  }
  const deleted = { id, object: 'customer', deleted: true };
  em.state.customers[id] = deleted;
  em.emit('customer.deleted', customer);
  return deleted;
}
