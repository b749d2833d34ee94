import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from './config.js';
import type { Clock } from './core/clock.js';
import { connectionPool } from './db.js';
import { ChangeFeed } from './infra/change-feed.js';
import type { JobQueue } from './infra/job-queue.js';
import type { Logger } from './infra/logger.js';
import { AnalyticsService } from './modules/analytics/analytics.service.js';
import { MrrVerificationService } from './modules/analytics/mrr-verification.service.js';
import { AppsService } from './modules/apps/apps.service.js';
import { AuditService } from './modules/audit/audit.service.js';
import { CredentialsService } from './modules/auth/credentials.service.js';
import { MagicLinksService } from './modules/auth/magic-links.service.js';
import { SessionsService } from './modules/auth/sessions.service.js';
import { BillingPortalService } from './modules/billing-portal/billing-portal.service.js';
import { CheckoutService } from './modules/checkout/checkout.service.js';
import { CouponsService } from './modules/coupons/coupons.service.js';
import { CustomersService } from './modules/customers/customers.service.js';
import type { Mailer } from './modules/email/mailer.js';
import { EntitlementTokensService } from './modules/entitlement-tokens/entitlement-tokens.service.js';
import { EntitlementsService } from './modules/entitlements/entitlements.service.js';
import { CustomerErasureService } from './modules/erasure/customer-erasure.service.js';
import { WebhookPayloadEraser } from './modules/erasure/webhook-payload-eraser.js';
import { IdempotencyService } from './modules/idempotency/idempotency.service.js';
import { InvoicesService } from './modules/invoices/invoices.service.js';
import { BalanceCache } from './modules/metering/balance-cache.js';
import { BalanceReader } from './modules/metering/balance-reader.js';
import { MeteringService } from './modules/metering/metering.service.js';
import { MeteringEraser } from './modules/metering/metering-eraser.js';
import { OverageReporter } from './modules/metering/overage-reporter.js';
import { OperatorSignInService } from './modules/operators/operator-sign-in.service.js';
import { OperatorsService } from './modules/operators/operators.service.js';
import { InvitationsService } from './modules/organizations/invitations.service.js';
import { OrganizationsService } from './modules/organizations/organizations.service.js';
import { SeatBilling } from './modules/organizations/seat-billing.js';
import type { PaymentProvider } from './modules/payments/payment-provider.js';
import { PlansService } from './modules/plans/plans.service.js';
import type { RateLimitStore } from './modules/rate-limits/rate-limit-store.js';
import { RateLimitsService } from './modules/rate-limits/rate-limits.service.js';
import { ProviderNotificationsService } from './modules/subscriptions/provider-notifications.service.js';
import { SubscriptionEvents } from './modules/subscriptions/subscription-events.js';
import { SubscriptionHistoryService } from './modules/subscriptions/subscription-history.service.js';
import { SubscriptionLifecycleService } from './modules/subscriptions/subscription-lifecycle.service.js';
import { SubscriptionMrrBackfillService } from './modules/subscriptions/subscription-mrr-backfill.service.js';
import { SubscriptionReconcileService } from './modules/subscriptions/subscription-reconcile.service.js';
import { SubscriptionsService } from './modules/subscriptions/subscriptions.service.js';
import { AddressGuard, type Resolver, systemResolver } from './modules/webhooks/address-guard.js';
import { OutboundEvents } from './modules/webhooks/outbound-events.js';
import { SecretBox } from './modules/webhooks/secret-box.js';
import { WebhookDispatcher } from './modules/webhooks/webhook-dispatcher.js';
import { WebhooksService } from './modules/webhooks/webhooks.service.js';
import type { Metrics } from './telemetry/metrics.js';

/** Everything the core needs from outside, created once per process. */
export interface Deps {
  readonly config: Config;
  readonly orm: MikroORM;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Outgoing e-mail: SMTP, or the dev mailbox in development. */
  readonly mailer: Mailer;
  /** The operator credential (from ADMIN_TOKEN, or generated in development). */
  readonly adminToken: string;
  /** Request counters: in this process, or in Redis (REDIS_URL) shared by every instance. */
  readonly rateLimitStore: RateLimitStore;
  /** Stripe through the official SDK: Stripe itself, or the bundled emulator in development and tests. */
  readonly payments: PaymentProvider;
  /** Background jobs on PostgreSQL: with workers in a serving process, enqueue-only in one-shot commands. */
  readonly jobs: JobQueue;
  /** How webhook destinations' names are resolved (tests inject one that answers private addresses). */
  readonly webhookResolver?: Resolver;
  /** Prometheus metrics of a serving process; absent in one-shot commands, where nothing is scraped. */
  readonly metrics?: Metrics;
}

/** The core services, shared by the REST and GraphQL transports. */
export interface Services {
  /** Committed database changes (LISTEN/NOTIFY) that keep the in-process caches exact; closed at shutdown. */
  readonly changes: ChangeFeed;
  /** Subscription analytics read from the MRR ledger. */
  readonly analytics: AnalyticsService;
  /** The operator's checks of the MRR ledger: verify, repair, and the back-fill of older subscriptions. */
  readonly mrrVerification: MrrVerificationService;
  readonly mrrBackfill: SubscriptionMrrBackfillService;
  readonly apps: AppsService;
  /** The audit log of operators', API keys' and the admin token's writes. */
  readonly audit: AuditService;
  /** Named dashboard operators and their roles. */
  readonly operators: OperatorsService;
  /** Operators' e-mailed sign-in links and cookie sessions. */
  readonly operatorSignIn: OperatorSignInService;
  readonly checkout: CheckoutService;
  readonly coupons: CouponsService;
  readonly credentials: CredentialsService;
  readonly customers: CustomersService;
  readonly customerErasure: CustomerErasureService;
  readonly entitlements: EntitlementsService;
  readonly entitlementTokens: EntitlementTokensService;
  /** Idempotency keys on POSTs of /v1 and GraphQL mutations, kept in PostgreSQL for every instance. */
  readonly idempotency: IdempotencyService;
  readonly invoices: InvoicesService;
  readonly magicLinks: MagicLinksService;
  /** Metered features: consumption, refunds, grants and live balances. */
  readonly metering: MeteringService;
  readonly overageReporter: OverageReporter;
  readonly organizations: OrganizationsService;
  /** Invitations into organizations (their tokens are verified by magicLinks). */
  readonly invitations: InvitationsService;
  /** Per-seat quantities at Stripe following membership; its workers are started by a serving process. */
  readonly seatBilling: SeatBilling;
  readonly plans: PlansService;
  readonly providerNotifications: ProviderNotificationsService;
  readonly rateLimits: RateLimitsService;
  readonly sessions: SessionsService;
  readonly subscriptionHistory: SubscriptionHistoryService;
  readonly subscriptionLifecycle: SubscriptionLifecycleService;
  readonly subscriptions: SubscriptionsService;
  readonly webhooks: WebhooksService;
  /** Delivers recorded events; its workers are started by a serving process only. */
  readonly webhookDispatcher: WebhookDispatcher;
  /** The outbox: announced deliveries are handed to the job queue before it stops. */
  readonly outboundEvents: OutboundEvents;
  readonly billingPortal: BillingPortalService;
  readonly subscriptionReconcile: SubscriptionReconcileService;
}

export function createServices(deps: Deps): Services {
  const metrics = deps.metrics;
  const changes = new ChangeFeed(
    deps.orm.config.get('clientUrl')!,
    deps.logger,
    {
      timeoutMs: deps.config.database.changeFeedTimeoutMs,
      connectTimeoutMs: deps.config.database.connectTimeoutMs,
    },
    metrics?.feed,
  );
  const pool = () => connectionPool(deps.orm);
  const balances = new BalanceReader(
    deps.orm,
    deps.clock,
    pool,
    new BalanceCache(changes, pool, deps.logger, metrics?.cache('balances')),
  );
  const overageReporter = new OverageReporter({
    orm: deps.orm,
    payments: deps.payments,
    jobs: deps.jobs,
    clock: deps.clock,
    logger: deps.logger,
    delaySeconds: deps.config.overage.reportDelaySeconds,
  });
  const entitlements = new EntitlementsService(deps.orm, changes, metrics?.cache('entitlements'), balances);
  const apps = new AppsService(deps.orm);
  const outboundEvents = new OutboundEvents(deps.jobs, deps.clock, deps.logger);
  const seatBilling = new SeatBilling(deps.orm, deps.jobs, deps.payments);
  const organizations = new OrganizationsService(deps.orm, deps.clock, outboundEvents, seatBilling);
  const subscriptionEvents = new SubscriptionEvents(outboundEvents);
  const customers = new CustomersService(deps.orm, deps.clock, outboundEvents, changes);
  const secrets = new SecretBox(deps.config.webhooks.secretKey);
  const invitations = new InvitationsService({
    orm: deps.orm,
    clock: deps.clock,
    logger: deps.logger,
    mailer: deps.mailer,
    publicBaseUrl: deps.config.publicBaseUrl,
    organizations,
    customers,
    events: outboundEvents,
  });
  const sessions = new SessionsService(deps.orm, deps.clock, apps, organizations, entitlements, changes);
  const idempotency = new IdempotencyService(deps.orm, deps.clock);
  const audit = new AuditService(deps.orm, deps.clock, deps.logger, deps.config.auditRetentionDays);
  const subscriptionLifecycle = new SubscriptionLifecycleService(
    deps.orm,
    deps.clock,
    deps.payments,
    subscriptionEvents,
  );
  return {
    apps,
    audit,
    operators: new OperatorsService(deps.orm, deps.clock),
    operatorSignIn: new OperatorSignInService(
      deps.orm,
      deps.clock,
      deps.logger,
      deps.mailer,
      deps.rateLimitStore,
      deps.config,
    ),
    checkout: new CheckoutService(deps.orm, deps.payments, deps.clock, outboundEvents),
    coupons: new CouponsService(deps.orm, deps.clock, deps.payments),
    changes,
    analytics: new AnalyticsService(deps.orm),
    mrrVerification: new MrrVerificationService(deps.orm),
    mrrBackfill: new SubscriptionMrrBackfillService(deps.orm, deps.payments),
    credentials: new CredentialsService(
      deps.orm,
      deps.clock,
      deps.adminToken,
      changes,
      metrics?.cache('sessions'),
    ),
    customers,
    // Every store that may keep copies of a customer's personal data erases them in the deletion.
    // The outbound webhooks come last: they erase stored payloads, then record customer.deleted.
    customerErasure: new CustomerErasureService(deps.orm, organizations, subscriptionLifecycle, [
      idempotency,
      audit,
      new MeteringEraser(),
      new WebhookPayloadEraser(outboundEvents),
    ]),
    entitlements,
    entitlementTokens: new EntitlementTokensService(
      deps.orm,
      deps.clock,
      secrets,
      apps,
      entitlements,
      deps.config.publicBaseUrl,
    ),
    idempotency,
    invoices: new InvoicesService(deps.orm, deps.payments),
    magicLinks: new MagicLinksService({
      orm: deps.orm,
      clock: deps.clock,
      logger: deps.logger,
      mailer: deps.mailer,
      publicBaseUrl: deps.config.publicBaseUrl,
      apps,
      customers,
      sessions,
      entitlements,
      invitations,
    }),
    metering: new MeteringService(
      deps.orm,
      deps.clock,
      entitlements,
      balances,
      outboundEvents,
      pool,
      overageReporter,
    ),
    overageReporter,
    organizations,
    invitations,
    seatBilling,
    plans: new PlansService(deps.orm, deps.payments, outboundEvents),
    providerNotifications: new ProviderNotificationsService(
      deps.orm,
      deps.payments,
      customers,
      subscriptionEvents,
      (outcome) => metrics?.notification('stripe', outcome),
      deps.logger,
      undefined,
      (statements) => metrics?.sharedStatementCall(statements),
    ),
    rateLimits: new RateLimitsService(deps.rateLimitStore, deps.config.rateLimits, (rule) =>
      metrics?.rateLimited(rule),
    ),
    sessions,
    subscriptionHistory: new SubscriptionHistoryService(deps.orm),
    subscriptionLifecycle,
    subscriptions: new SubscriptionsService(deps.orm),
    webhooks: new WebhooksService(
      deps.orm,
      deps.clock,
      deps.jobs,
      secrets,
      deps.config.production,
      outboundEvents,
    ),
    outboundEvents,
    webhookDispatcher: new WebhookDispatcher({
      orm: deps.orm,
      jobs: deps.jobs,
      clock: deps.clock,
      logger: deps.logger,
      secrets,
      guard: new AddressGuard(deps.webhookResolver ?? systemResolver, !deps.config.production),
      retryScheduleSeconds: deps.config.webhooks.retryScheduleSeconds,
      retentionDays: deps.config.webhooks.retentionDays,
      httpsOnly: deps.config.production,
      observe: metrics?.outboundAttempt,
    }),
    billingPortal: new BillingPortalService(deps.orm, deps.payments),
    subscriptionReconcile: new SubscriptionReconcileService(
      deps.orm,
      deps.clock,
      deps.payments,
      deps.logger,
      subscriptionEvents,
    ),
  };
}
