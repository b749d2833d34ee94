import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { NotFoundError } from '../../core/errors.js';
import { type Principal, requireAdmin, requireApiKey } from '../../core/principal.js';
import { idSchema, parseInput } from '../../core/validation.js';
import type { Logger } from '../../infra/logger.js';
import { App } from '../apps/app.entity.js';
import { assertOrganizationsEnabled } from '../apps/app-rules.js';
import { decodeCallerMetadata } from '../checkout/checkout-metadata.js';
import { Customer } from '../customers/customer.entity.js';
import { Organization } from '../organizations/organization.entity.js';
import type { PaymentProvider } from '../payments/payment-provider.js';
import { Subscription } from './subscription.entity.js';
import type { SubscriptionEvents } from './subscription-events.js';
import {
  importSubscription,
  planForPrices,
  type SkippedSubscription,
  type SubscriptionOwner,
  unmatchedPrice,
} from './subscription-import.js';
import { noOptionsSchema } from './subscription-lifecycle.schemas.js';

/** The answer of a sync: the context's subscriptions afterwards (newest first) and what was not imported. */
export interface SyncResult {
  readonly subscriptions: Subscription[];
  readonly skipped: SkippedSubscription[];
}

/** What one reconciliation run changed, for the log and `tollgate sync`. */
export interface ReconcileReport {
  /** Customers and organizations whose Stripe customer was read. */
  readonly contexts: number;
  readonly created: ReadonlyArray<{ readonly subscriptionId: string; readonly stripeSubscriptionId: string }>;
  readonly updated: ReadonlyArray<{ readonly subscriptionId: string; readonly stripeSubscriptionId: string }>;
  readonly skipped: SkippedSubscription[];
}

/** How many customers (or organizations) one database page of a reconciliation run reads. */
const PAGE = 100;

/**
 * Reconciliation with Stripe: re-reads a linked Stripe customer's subscriptions and applies them through
 * the same import path as the notifications, creating the ones Tollgate never saw (made in Stripe's
 * dashboard, or whose notifications were lost). A subscription whose price matches no plan of the app is
 * not imported — every Subscription the API shows has a plan — and is reported as skipped, with why.
 */
export class SubscriptionReconcileService {
  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
    private readonly payments: PaymentProvider,
    private readonly logger: Logger,
    private readonly events: SubscriptionEvents,
  ) {}

  /** `POST /v1/customers/:id/sync` (API key): the customer's Stripe subscriptions, applied. */
  async syncCustomer(principal: Principal, rawId: unknown, input: unknown = {}): Promise<SyncResult> {
    const { appId } = requireApiKey(principal);
    const id = parseInput(idSchema, rawId);
    parseInput(noOptionsSchema, input ?? {});
    const customer = await this.orm.em.findOne(Customer, { id, app: appId });
    if (!customer) throw new NotFoundError('Customer', id);
    const report = emptyReport();
    await this.#syncContext({ appId, customerId: id }, customer.paymentCustomerId, report);
    return { subscriptions: await this.#subscriptionsOf({ customer: id }), skipped: report.skipped };
  }

  /** `POST /v1/organizations/:id/sync` (API key): the organization's Stripe subscriptions, applied. */
  async syncOrganization(principal: Principal, rawId: unknown, input: unknown = {}): Promise<SyncResult> {
    const { appId } = requireApiKey(principal);
    const id = parseInput(idSchema, rawId);
    parseInput(noOptionsSchema, input ?? {});
    const app = await this.orm.em.findOneOrFail(App, { id: appId });
    assertOrganizationsEnabled(app);
    const organization = await this.orm.em.findOne(Organization, { id, app: appId });
    if (!organization) throw new NotFoundError('Organization', id);
    const report = emptyReport();
    await this.#syncContext({ appId, organizationId: id }, organization.paymentCustomerId, report);
    return { subscriptions: await this.#subscriptionsOf({ organization: id }), skipped: report.skipped };
  }

  /** `tollgate sync --app <id>` (the operator): `reconcile` for one app, which must exist. */
  async reconcileApp(principal: Principal, rawAppId: unknown): Promise<{ appId: string } & ReconcileReport> {
    requireAdmin(principal);
    const appId = parseInput(idSchema, rawAppId);
    if (!(await this.orm.em.findOne(App, { id: appId }))) throw new NotFoundError('App', appId);
    return { appId, ...(await this.reconcile({ appId })) };
  }

  /**
   * Every customer and organization with a Stripe customer, in one app or in all of them (the periodic
   * run): repairs drift and logs what it changed. Not a use case of a caller: the schedule and
   * `tollgate sync` run it with the process's own authority.
   */
  async reconcile(options: { readonly appId?: string } = {}): Promise<ReconcileReport> {
    const report = emptyReport();
    const started = Date.now();
    for (const entity of ['customer', 'organization'] as const) {
      let after = '';
      for (;;) {
        const rows = await this.#linkedPage(entity, options.appId, after);
        for (const row of rows) {
          const owner: SubscriptionOwner =
            entity === 'customer'
              ? { appId: row.app_id, customerId: row.id }
              : { appId: row.app_id, organizationId: row.id };
          try {
            await this.#syncContext(owner, row.payment_customer_id, report);
          } catch (error) {
            // One unreadable customer must not stop the repair of the others.
            this.logger.error({ err: error, [`${entity}Id`]: row.id }, 'stripe reconcile: context failed');
          }
        }
        if (rows.length < PAGE) break;
        after = rows[rows.length - 1]!.id;
      }
    }
    this.logger.info(
      {
        appId: options.appId,
        contexts: report.contexts,
        created: report.created.length,
        updated: report.updated.length,
        skipped: report.skipped.length,
        ms: Date.now() - started,
      },
      'stripe reconcile: done',
    );
    return report;
  }

  #linkedPage(entity: 'customer' | 'organization', appId: string | undefined, after: string) {
    // Keyset pages by id: no offset scan, and rows created meanwhile are simply met or not.
    return this.orm.em.getConnection().execute<{ id: string; app_id: string; payment_customer_id: string }[]>(
      `select id, app_id, payment_customer_id from ${entity}
        where payment_customer_id is not null and id > ? ${appId ? 'and app_id = ?' : ''}
        order by id limit ${PAGE}`,
      appId ? [after, appId] : [after],
    );
  }

  async #syncContext(
    owner: SubscriptionOwner,
    stripeCustomerId: string | null,
    report: { contexts: number } & Mutable<ReconcileReport>,
  ): Promise<void> {
    if (!stripeCustomerId) return;
    report.contexts += 1;
    // Taken before the read: a notification created after it carries newer news and wins.
    const asOf = Math.floor(this.clock.now().getTime() / 1000);
    const remotes = await this.payments.listSubscriptions(stripeCustomerId);
    for (const remote of remotes) {
      // One short transaction per subscription: no row lock is held across another's import.
      const outcome = await this.orm.em.fork().transactional(async (em: EntityManager) => {
        const existing = await em.findOne(
          Subscription,
          { stripeSubscriptionId: remote.id },
          { populate: ['plan'] },
        );
        const plan = (await planForPrices(em, owner.appId, remote.priceIds)) ?? existing?.plan ?? null;
        if (!plan) return { kind: 'skipped' as const, skipped: unmatchedPrice(remote) };
        return importSubscription(em, {
          owner,
          plan,
          remote,
          metadata: decodeCallerMetadata(remote.metadata),
          asOf,
          existing: 'apply',
          events: this.events,
          cause: 'reconciliation',
          // Read at `asOf`: a change stored in that same second may have come after the read.
          latest: () => this.payments.retrieveSubscription(remote.id),
        });
      });
      const context =
        owner.customerId !== undefined
          ? { customerId: owner.customerId }
          : { organizationId: owner.organizationId };
      switch (outcome.kind) {
        case 'skipped':
          report.skipped.push(outcome.skipped);
          this.logger.warn(
            { appId: owner.appId, ...context, ...outcome.skipped },
            'stripe reconcile: subscription skipped',
          );
          break;
        case 'created':
        case 'updated': {
          const change = { subscriptionId: outcome.subscription.id, stripeSubscriptionId: remote.id };
          (outcome.kind === 'created' ? report.created : report.updated).push(change);
          this.logger.info(
            {
              appId: owner.appId,
              ...context,
              ...change,
              status: outcome.subscription.status,
              plan: outcome.subscription.plan.slug,
            },
            `stripe reconcile: subscription ${outcome.kind}`,
          );
          break;
        }
        case 'existing':
        case 'unchanged':
          break;
      }
    }
  }

  #subscriptionsOf(where: { customer: string } | { organization: string }): Promise<Subscription[]> {
    return this.orm.em.find(Subscription, where, {
      populate: ['plan'],
      orderBy: { createdAt: 'desc', id: 'desc' },
      refresh: true,
    });
  }
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] extends ReadonlyArray<infer U> ? U[] : T[K] };

function emptyReport(): { contexts: number } & Mutable<ReconcileReport> {
  return { contexts: 0, created: [], updated: [], skipped: [] };
}
