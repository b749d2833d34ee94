import type { GraphQLSchema } from 'graphql';
import { buildSchema, type ClassType, type ContainerType, type NonEmptyArray } from 'type-graphql';
import type { GraphQLContext } from './graphql/context.js';
import { AnalyticsResolver } from './modules/analytics/analytics.resolver.js';
import { AppsResolver } from './modules/apps/apps.resolver.js';
import { AuditResolver } from './modules/audit/audit.resolver.js';
import { AuthResolver } from './modules/auth/auth.resolver.js';
import { BillingPortalResolver } from './modules/billing-portal/billing-portal.resolver.js';
import { CheckoutResolver } from './modules/checkout/checkout.resolver.js';
import { CouponsResolver } from './modules/coupons/coupons.resolver.js';
import { CustomersResolver } from './modules/customers/customers.resolver.js';
import { EntitlementTokensResolver } from './modules/entitlement-tokens/entitlement-tokens.resolver.js';
import { EntitlementsResolver } from './modules/entitlements/entitlements.resolver.js';
import { CustomerErasureResolver } from './modules/erasure/customer-erasure.resolver.js';
import { InvoicesResolver } from './modules/invoices/invoices.resolver.js';
import { MeteringResolver } from './modules/metering/metering.resolver.js';
import { OperatorsResolver } from './modules/operators/operators.resolver.js';
import { OrganizationsResolver } from './modules/organizations/organizations.resolver.js';
import { PlansResolver } from './modules/plans/plans.resolver.js';
import { FIELD_LIMITS } from './modules/rate-limits/field-limits.js';
import { applyFieldRateLimits, FieldRateLimiter } from './modules/rate-limits/field-rate-limit.middleware.js';
import { CustomerSubscriptionsResolver } from './modules/subscriptions/customer-subscriptions.resolver.js';
import { SubscriptionLifecycleResolver } from './modules/subscriptions/subscription-lifecycle.resolver.js';
import { SubscriptionReconcileResolver } from './modules/subscriptions/subscription-reconcile.resolver.js';
import { SubscriptionsResolver } from './modules/subscriptions/subscriptions.resolver.js';
import { WebhooksResolver } from './modules/webhooks/webhooks.resolver.js';
import type { Services } from './services.js';

/** Every resolver of the API. A new module adds its resolver here and in `createResolverContainer`. */
export const RESOLVERS: NonEmptyArray<ClassType> = [
  AppsResolver,
  AuthResolver,
  CheckoutResolver,
  CouponsResolver,
  CustomersResolver,
  CustomerErasureResolver,
  EntitlementsResolver,
  EntitlementTokensResolver,
  InvoicesResolver,
  MeteringResolver,
  OrganizationsResolver,
  CustomerSubscriptionsResolver,
  SubscriptionLifecycleResolver,
  PlansResolver,
  SubscriptionsResolver,
  WebhooksResolver,
  BillingPortalResolver,
  SubscriptionReconcileResolver,
  AnalyticsResolver,
  OperatorsResolver,
  AuditResolver,
];

/**
 * One server's resolvers (and its field rate limiter), each built once with only the services
 * it uses. type-graphql asks this container for an instance whenever a field of that class resolves.
 */
export function createResolverContainer(services: Services): ContainerType {
  const instances = new Map<unknown, object>([
    [AppsResolver, new AppsResolver(services.apps)],
    [AuthResolver, new AuthResolver(services.magicLinks, services.sessions)],
    [CheckoutResolver, new CheckoutResolver(services.checkout)],
    [CouponsResolver, new CouponsResolver(services.coupons)],
    [MeteringResolver, new MeteringResolver(services.metering)],
    [CustomersResolver, new CustomersResolver(services.customers)],
    [CustomerErasureResolver, new CustomerErasureResolver(services.customerErasure)],
    [EntitlementsResolver, new EntitlementsResolver(services.entitlements)],
    [EntitlementTokensResolver, new EntitlementTokensResolver(services.entitlementTokens)],
    [InvoicesResolver, new InvoicesResolver(services.invoices)],
    [OrganizationsResolver, new OrganizationsResolver(services.organizations, services.invitations)],
    [CustomerSubscriptionsResolver, new CustomerSubscriptionsResolver(services.subscriptionHistory)],
    [SubscriptionLifecycleResolver, new SubscriptionLifecycleResolver(services.subscriptionLifecycle)],
    [PlansResolver, new PlansResolver(services.plans)],
    [SubscriptionsResolver, new SubscriptionsResolver(services.subscriptions)],
    [WebhooksResolver, new WebhooksResolver(services.webhooks)],
    [BillingPortalResolver, new BillingPortalResolver(services.billingPortal)],
    [SubscriptionReconcileResolver, new SubscriptionReconcileResolver(services.subscriptionReconcile)],
    [AnalyticsResolver, new AnalyticsResolver(services.analytics)],
    [OperatorsResolver, new OperatorsResolver(services.operators)],
    [AuditResolver, new AuditResolver(services.audit)],
    [FieldRateLimiter, new FieldRateLimiter(services.rateLimits)],
  ]);
  return {
    get(someClass: { name?: string }) {
      const instance = instances.get(someClass);
      // A class missing here is a wiring bug: fail loudly rather than let type-graphql construct it bare.
      if (!instance) throw new Error(`No resolver instance registered for ${someClass.name ?? 'a class'}`);
      return instance;
    },
  };
}

let cached: Promise<GraphQLSchema> | undefined;

/**
 * Builds the schema once per process (type-graphql metadata is global). Resolver instances come from the
 * request's context, so servers with different services can share the one schema.
 */
export function getSchema(): Promise<GraphQLSchema> {
  cached ??= buildSchema({
    resolvers: RESOLVERS,
    validate: false,
    container: ({ context }: { context: GraphQLContext }) => context.resolvers,
  }).then((schema) => applyFieldRateLimits(schema, FIELD_LIMITS));
  return cached;
}
