import type { GraphQLSchema } from 'graphql';
import { buildSchema, type ClassType, type NonEmptyArray } from 'type-graphql';
import { AppsResolver } from '../modules/apps/apps.resolver.js';
import { AuthResolver } from '../modules/auth/auth.resolver.js';
import { CheckoutResolver } from '../modules/checkout/checkout.resolver.js';
import { CouponsResolver } from '../modules/coupons/coupons.resolver.js';
import { CustomersResolver } from '../modules/customers/customers.resolver.js';
import { EntitlementsResolver } from '../modules/entitlements/entitlements.resolver.js';
import { InvoicesResolver } from '../modules/invoices/invoices.resolver.js';
import { OrganizationsResolver } from '../modules/organizations/organizations.resolver.js';
import { PlansResolver } from '../modules/plans/plans.resolver.js';
import { FIELD_LIMITS } from '../modules/rate-limits/field-limits.js';
import { CustomerSubscriptionsResolver } from '../modules/subscriptions/customer-subscriptions.resolver.js';
import { SubscriptionLifecycleResolver } from '../modules/subscriptions/subscription-lifecycle.resolver.js';
import { SubscriptionsResolver } from '../modules/subscriptions/subscriptions.resolver.js';
import { applyFieldRateLimits } from './field-rate-limit.middleware.js';

/** Every resolver of the API. A new module adds its resolver here. */
export const RESOLVERS: NonEmptyArray<ClassType> = [
  AppsResolver,
  AuthResolver,
  CheckoutResolver,
  CouponsResolver,
  CustomersResolver,
  EntitlementsResolver,
  InvoicesResolver,
  OrganizationsResolver,
  CustomerSubscriptionsResolver,
  SubscriptionLifecycleResolver,
  PlansResolver,
  SubscriptionsResolver,
];

let cached: Promise<GraphQLSchema> | undefined;

/** Builds the schema once per process (type-graphql metadata is global). */
export function getSchema(): Promise<GraphQLSchema> {
  cached ??= buildSchema({ resolvers: RESOLVERS, validate: false }).then((schema) =>
    applyFieldRateLimits(schema, FIELD_LIMITS),
  );
  return cached;
}
