import { isDeepStrictEqual } from 'node:util';
import type { MikroORM } from '@mikro-orm/postgresql';
import { NotFoundError, ValidationError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { type AppScope, type Principal, requireAdmin, requireAppPrincipal } from '../../core/principal.js';
import { idSchema, parseInput } from '../../core/validation.js';
import { App } from '../apps/app.entity.js';
import { actingOnApp } from '../apps/app-rules.js';
import type { PaymentProvider, ProviderPrice } from '../payments/payment-provider.js';
import type { OutboundEvents } from '../webhooks/outbound-events.js';
import { overagePrices } from './metered-feature.js';
import { Plan } from './plan.entity.js';
import { presentPlan } from './plan.presenter.js';
import { planInputSchema, planPriceSchema } from './plans.schemas.js';

/** Plans of an app: the operator defines them; apps and their customers read them. */
export class PlansService {
  constructor(
    private readonly orm: MikroORM,
    private readonly payments: PaymentProvider,
    private readonly events: OutboundEvents,
  ) {}

  /** Creates a monthly (or other) recurring price on a new product at Stripe, for a plan to sell. */
  async createPlanPrice(principal: Principal, input: unknown): Promise<ProviderPrice> {
    requireAdmin(principal);
    return this.payments.createRecurringPrice(parseInput(planPriceSchema, input));
  }

  /**
   * Creates the plan with this id (slug) or changes it; fields left out keep their value. Making a plan
   * the default takes the default away from the app's other plans in the same transaction. Changing an
   * existing plan records one `plan.updated` event (not one per customer on the plan, who may be many).
   * A new or changed `stripePriceId` must be a price checkout can sell (see `#assertSellablePrice`).
   */
  async upsertPlan(principal: Principal, appId: unknown, input: unknown): Promise<Plan> {
    requireAdmin(principal);
    const app = parseInput(idSchema, appId);
    const { id: slug, ...fields } = parseInput(planInputSchema, input);
    if (fields.stripePriceId) {
      const current = await this.orm.em.fork().findOne(Plan, { app, slug }, { fields: ['stripePriceId'] });
      if (current?.stripePriceId !== fields.stripePriceId)
        await this.#assertSellablePrice(fields.stripePriceId);
    }
    if (fields.features) {
      for (const [feature, priceId] of overagePrices(fields.features))
        await this.#assertOveragePrice(`features.${feature}.overage.stripePriceId`, priceId);
    }
    return this.orm.em.transactional(async (em) => {
      if (!(await em.findOne(App, { id: app }))) throw new NotFoundError('App', app);
      // Serializes upserts of one app's plans, so two concurrent "make default" calls cannot both win.
      await em
        .getConnection()
        .execute('select id from app where id = ? for update', [app], 'all', em.getTransactionContext());
      let plan = await em.findOne(Plan, { app, slug });
      const before = plan ? presentPlan(plan) : null;
      if (!plan) {
        plan = em.create(Plan, { id: newId('pln'), app: em.getReference(App, app), slug, name: fields.name });
      }
      em.assign(plan, fields);
      // The seat limit answers `check/seats`: a feature of that name would say something else.
      if (plan.seats && Object.hasOwn(plan.features, 'seats')) {
        throw ValidationError.forField('seats', 'a plan with seats cannot also have a feature named seats');
      }
      const after = presentPlan(plan);
      // `ev`: the plan's version (its last change, in ms); every context on it gets an entitlement version
      // at least this large, so a client whose token has an older one refreshes.
      if (before && !isDeepStrictEqual(before, after)) {
        plan.updatedAt = new Date();
        await this.events.record(em, app, 'plan.updated', { ...after, ev: plan.updatedAt.getTime() }, []);
      }
      if (fields.isDefault) {
        await em.nativeUpdate(Plan, { app, isDefault: true, id: { $ne: plan.id } }, { isDefault: false });
      }
      await em.flush();
      return plan;
    });
  }

  /**
   * Checked when the price is set, not at the first checkout: a price checkout cannot sell (unknown,
   * archived, one-time, or charged per reported use, which a plan's one-item subscription cannot carry)
   * would otherwise surface only as a 502 in front of a paying customer.
   */
  async #assertSellablePrice(priceId: string): Promise<void> {
    const price = await this.payments.retrievePrice(priceId);
    const problem = !price
      ? `no such price at the payment provider: ${priceId}`
      : !price.active
        ? `price ${priceId} is not active at the payment provider`
        : !price.recurring
          ? `price ${priceId} is not recurring: a plan needs a recurring price`
          : price.usageType === 'metered'
            ? `price ${priceId} is metered (usage_type=metered): a plan needs a licensed recurring price`
            : null;
    if (problem) throw ValidationError.forField('stripePriceId', problem);
  }

  /**
   * An overage price bills reported usage: it must be an active recurring price with
   * `usage_type=metered` whose Billing Meter exists and is active (meter events are sent by its event name).
   */
  async #assertOveragePrice(field: string, priceId: string): Promise<void> {
    const price = await this.payments.retrievePrice(priceId);
    let problem = !price
      ? `no such price at the payment provider: ${priceId}`
      : !price.active
        ? `price ${priceId} is not active at the payment provider`
        : price.usageType !== 'metered' || price.meter === null
          ? `price ${priceId} is not metered: an overage price needs recurring.usage_type=metered and a Billing Meter`
          : null;
    if (!problem && price?.meter) {
      const meter = await this.payments.retrieveMeter(price.meter);
      if (!meter?.active) problem = `the Billing Meter ${price.meter} of price ${priceId} is not active`;
    }
    if (problem) throw ValidationError.forField(field, problem);
  }

  /**
   * The price a plan sells, as the payment provider has it (its amount and interval live there); null
   * for a free plan or a price the provider no longer knows.
   */
  async priceOf(stripePriceId: string | null): Promise<ProviderPrice | null> {
    return stripePriceId ? this.payments.retrievePrice(stripePriceId) : null;
  }

  /** The plans of the caller's app (an API key or session), or of `appId` for the operator. */
  async listPlans(principal: Principal, scope: AppScope = {}): Promise<Plan[]> {
    const { appId: app } = requireAppPrincipal(await actingOnApp(this.orm.em, principal, scope));
    return this.orm.em.find(Plan, { app }, { orderBy: { createdAt: 'asc', slug: 'asc' } });
  }
}
