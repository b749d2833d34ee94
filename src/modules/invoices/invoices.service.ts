import type { MikroORM } from '@mikro-orm/postgresql';
import { NotFoundError, ValidationError } from '../../core/errors.js';
import { type AppScope, type Principal, requireAppPrincipal } from '../../core/principal.js';
import { parseInput } from '../../core/validation.js';
import { actingOnApp } from '../apps/app-rules.js';
import { Customer } from '../customers/customer.entity.js';
import type { PaymentProvider, ProviderInvoice } from '../payments/payment-provider.js';
import { listInvoicesSchema } from './invoices.schemas.js';

/**
 * A customer's invoice history, read from Stripe on every call (Tollgate keeps no copy, so it is never
 * stale). An API key asks for a customer of its app; a session for its own customer. A customer never
 * linked to Stripe has no invoices; Stripe being unreachable is a 503, never an empty list.
 */
export class InvoicesService {
  constructor(
    private readonly orm: MikroORM,
    private readonly payments: PaymentProvider,
  ) {}

  /** Newest first, at most `limit` (default 20, at most 100); the operator names the app (`scope`). */
  async listInvoices(principal: Principal, input: unknown, scope?: AppScope): Promise<ProviderInvoice[]> {
    const caller = requireAppPrincipal(await actingOnApp(this.orm.em, principal, scope));
    const { customerId, limit } = parseInput(listInvoicesSchema, input ?? {});
    let id: string;
    if (caller.kind === 'session') {
      // Another customer's id is answered like an unknown one: a session learns nothing about others.
      if (customerId !== undefined && customerId !== caller.customerId)
        throw new NotFoundError('Customer', customerId);
      id = caller.customerId;
    } else {
      if (customerId === undefined)
        throw ValidationError.forField('customerId', 'is required with an API key');
      id = customerId;
    }
    const customer = await this.orm.em.findOne(Customer, { id, app: caller.appId });
    if (!customer) throw new NotFoundError('Customer', id);
    if (!customer.paymentCustomerId) return [];
    return this.payments.listInvoices(customer.paymentCustomerId, limit);
  }
}
