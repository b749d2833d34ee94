import type { EntityManager } from '@mikro-orm/postgresql';
import type { CustomerDataEraser, ErasedCustomer } from '../erasure/customer-erasure.service.js';

/**
 * A deleted customer's metering rows: its own balance (buckets and usage) goes; in an organization's
 * usage it consumed, the customer link, the metadata and nothing else are cleared (the organization's
 * balance stays exact).
 */
export class MeteringEraser implements CustomerDataEraser {
  async eraseCustomer(em: EntityManager, customer: ErasedCustomer): Promise<void> {
    await eraseMeteringOf(em, customer.appId, customer.customerId);
  }
}

/** Erases a customer's metering data by its id (see MeteringEraser). */
export async function eraseMeteringOf(em: EntityManager, appId: string, customerId: string): Promise<void> {
  const connection = em.getConnection();
  const tx = em.getTransactionContext();
  await connection.execute(
    'delete from usage_record where app_id = ? and subject_id = ?',
    [appId, customerId],
    'run',
    tx,
  );
  await connection.execute(
    `update usage_record set customer_id = null, metadata = '{}' where app_id = ? and customer_id = ?`,
    [appId, customerId],
    'run',
    tx,
  );
  await connection.execute(
    'delete from credit_bucket where app_id = ? and (subject_id = ? or customer_id = ?)',
    [appId, customerId, customerId],
    'run',
    tx,
  );
}
