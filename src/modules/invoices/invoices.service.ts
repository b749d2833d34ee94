import type { MikroORM } from '@mikro-orm/postgresql';
import { NotFoundError, ValidationError } from '../../core/errors.js';
import {
  type AppPrincipal,
  type AppScope,
  type Principal,
  requireAppPrincipal,
} from '../../core/principal.js';
import { parseInput } from '../../core/validation.js';
import { App } from '../apps/app.entity.js';
import { actingOnApp, assertOrganizationsEnabled } from '../apps/app-rules.js';
import { Customer } from '../customers/customer.entity.js';
import { Organization } from '../organizations/organization.entity.js';
import type { PaymentProvider, ProviderInvoice } from '../payments/payment-provider.js';
import { listInvoicesSchema } from './invoices.schemas.js';

/**
 * The invoice history of a customer or an organization (each its own Stripe customer), read from Stripe
 * on every call (Tollgate keeps no copy, so it is never stale). An API key names exactly one of
 * `customerId` / `organizationId` of its app; a session reads its own context (its organization's
 * after a switch). Never linked to Stripe → no invoices; Stripe unreachable → 503, never an empty list.
 */
export class InvoicesService {
  constructor(
    private readonly orm: MikroORM,
    private readonly payments: PaymentProvider,
  ) {}

  /** Newest first, at most `limit` (default 20, at most 100); the operator names the app (`scope`). */
  async listInvoices(principal: Principal, input: unknown, scope?: AppScope): Promise<ProviderInvoice[]> {
    const caller = requireAppPrincipal(await actingOnApp(this.orm.em, principal, scope));
    const { customerId, organizationId, limit } = parseInput(listInvoicesSchema, input ?? {});
    const owner = await this.#ownerOf(caller, customerId, organizationId);
    if (!owner.paymentCustomerId) return [];
    return this.payments.listInvoices(owner.paymentCustomerId, limit);
  }

  async #ownerOf(
    caller: AppPrincipal,
    customerId: string | undefined,
    organizationId: string | undefined,
  ): Promise<{ paymentCustomerId: string | null }> {
    if (caller.kind === 'session') {
      if (organizationId !== undefined)
        throw ValidationError.forField('organizationId', 'is for API keys: a session uses its own context');
      // Another customer's id is answered like an unknown one: a session learns nothing about others.
      if (customerId !== undefined && customerId !== caller.customerId)
        throw new NotFoundError('Customer', customerId);
      if (customerId === undefined && caller.organizationId !== undefined)
        return this.#organizationOrFail(caller.appId, caller.organizationId);
      return this.#customerOrFail(caller.appId, caller.customerId);
    }
    if ((customerId === undefined) === (organizationId === undefined))
      throw new ValidationError('exactly one of customerId or organizationId is required');
    return customerId !== undefined
      ? this.#customerOrFail(caller.appId, customerId)
      : this.#organizationOrFail(caller.appId, organizationId!);
  }

  async #customerOrFail(appId: string, id: string): Promise<Customer> {
    const customer = await this.orm.em.findOne(Customer, { id, app: appId });
    if (!customer) throw new NotFoundError('Customer', id);
    return customer;
  }

  async #organizationOrFail(appId: string, id: string): Promise<Organization> {
    const organization = await this.orm.em.findOne(Organization, { id, app: appId }, { populate: ['app'] });
    assertOrganizationsEnabled(organization?.app ?? (await this.orm.em.findOne(App, appId)));
    if (!organization) throw new NotFoundError('Organization', id);
    return organization;
  }
}
