import { randomBytes } from 'node:crypto';
import { newId } from '../../src/core/ids.js';
import type { OrgRole } from '../../src/core/principal.js';
import { type Orm, withContext } from '../../src/db.js';
import { Customer } from '../../src/modules/customers/customer.entity.js';
import { Organization, OrganizationMember } from '../../src/modules/organizations/organization.entity.js';
import type { SubscriptionStatus } from '../../src/modules/payments/payment-provider.js';
import { type Features, Plan } from '../../src/modules/plans/plan.entity.js';
import { Subscription } from '../../src/modules/subscriptions/subscription.entity.js';
import type { Core } from './services.js';

/**
 * Rows written straight through the ORM into the test database (our own database, not a mock), for
 * states that other areas' flows (checkout, webhooks) produce in production.
 */
export class Fixtures {
  constructor(
    private readonly core: Core,
    readonly appId: string,
  ) {}

  private get orm(): Orm {
    return this.core.deps.orm;
  }

  async customer(email = `c-${randomBytes(4).toString('hex')}@example.com`): Promise<string> {
    return withContext(this.orm, async () => {
      const em = this.orm.em;
      const customer = em.create(Customer, { id: newId('cus'), app: this.appId, email, emailLower: email });
      await em.flush();
      return customer.id;
    });
  }

  async plan(slug: string, features: Features, options: { isDefault?: boolean } = {}): Promise<string> {
    return withContext(this.orm, async () => {
      const em = this.orm.em;
      const plan = em.create(Plan, {
        id: newId('pln'),
        app: this.appId,
        slug,
        name: slug.charAt(0).toUpperCase() + slug.slice(1),
        stripePriceId: options.isDefault ? null : `price_${slug}`,
        features,
        isDefault: options.isDefault ?? false,
      });
      await em.flush();
      return plan.id;
    });
  }

  async subscription(
    owner: { customerId: string } | { organizationId: string; customerId?: string },
    planId: string,
    status: SubscriptionStatus,
    createdAt = new Date(),
  ): Promise<string> {
    return withContext(this.orm, async () => {
      const em = this.orm.em;
      const sub = em.create(Subscription, {
        id: newId('sub'),
        app: this.appId,
        customer: owner.customerId ?? null,
        organization: 'organizationId' in owner ? owner.organizationId : null,
        plan: planId,
        stripeSubscriptionId: `sub_${randomBytes(8).toString('hex')}`,
        stripeCustomerId: `cus_${randomBytes(8).toString('hex')}`,
        status,
        createdAt,
      });
      await em.flush();
      return sub.id;
    });
  }

  async setSubscription(id: string, change: { status?: SubscriptionStatus; planId?: string }): Promise<void> {
    await withContext(this.orm, async () => {
      const em = this.orm.em;
      const sub = await em.findOneOrFail(Subscription, id);
      if (change.status) sub.status = change.status;
      if (change.planId) sub.plan = em.getReference(Plan, change.planId);
      await em.flush();
    });
  }

  async setPlanFeatures(planId: string, features: Features): Promise<void> {
    await withContext(this.orm, async () => {
      const em = this.orm.em;
      const plan = await em.findOneOrFail(Plan, planId);
      plan.features = features;
      await em.flush();
    });
  }

  async organization(members: Record<string, OrgRole>): Promise<string> {
    return withContext(this.orm, async () => {
      const em = this.orm.em;
      const org = em.create(Organization, { id: newId('org'), app: this.appId, name: 'Acme' });
      for (const [customerId, role] of Object.entries(members)) {
        em.create(OrganizationMember, { id: newId('mem'), organization: org, customer: customerId, role });
      }
      await em.flush();
      return org.id;
    });
  }

  /** A session token for a customer, optionally in an organization context. */
  async session(customerId: string, organizationId?: string): Promise<string> {
    return withContext(this.orm, async () => {
      const { token } = await this.core.services.sessions.issue({
        appId: this.appId,
        customerId,
        organizationId,
      });
      return token;
    });
  }
}
