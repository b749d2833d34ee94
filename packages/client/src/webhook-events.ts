import type { components } from './openapi.js';
import type { CreditGrant, Customer, Entitlements, Subscription } from './types.js';

/** One delivery's body: `{ type, timestamp, data }`, `data` depending on `type`. */
interface WebhookEventOf<Type extends string, Data> {
  readonly type: Type;
  /** When the change happened (ISO 8601). */
  readonly timestamp: string;
  readonly data: Data;
}

/** A plan as `plan.updated` carries it. */
export interface PlanSnapshot {
  readonly id: string;
  readonly name: string;
  readonly stripePriceId: string | null;
  readonly trialDays: number;
  readonly features: components['schemas']['Features'];
  readonly isDefault: boolean;
  /** Sold no more: checkout and plan changes refuse it; subscriptions on it keep it. */
  readonly archived: boolean;
  /** How the plan counts an organization's seats; null when it does not. */
  readonly seats:
    | { readonly mode: 'limit'; readonly included: number }
    | { readonly mode: 'per_seat'; readonly min: number; readonly max?: number }
    | null;
}

/** Who joined or left which organization, with which role. */
export interface OrganizationMembership {
  readonly organizationId: string;
  readonly customerId: string;
  readonly role: 'owner' | 'admin' | 'member';
}

/** An invitation as `organization.invitation_created` carries it: the Invitation and its organization. */
export type OrganizationInvitationCreated = components['schemas']['Invitation'] & {
  readonly organizationId: string;
};

/** What `customer.deleted` says of the customer: only its id. */
export interface DeletedCustomerRef {
  readonly id: string;
}

/** What a test event (`webhook.test`, sent when the operator asks) carries. */
export interface WebhookTest {
  readonly endpointId: string;
  readonly message: string;
}

/** Whose entitlements changed, and what they are now. */
export type EntitlementsChange = Entitlements &
  ({ readonly customerId: string } | { readonly organizationId: string });

/** A metered balance that a consumption brought to 0: whose, which feature, and the balance now. */
export interface UsageLimitReached {
  readonly customerId: string | null;
  readonly organizationId: string | null;
  readonly feature: string;
  readonly limit: number;
  readonly granted: number;
  readonly used: number;
  readonly remaining: number;
  readonly resetsAt: string | null;
}

export type CustomerCreatedEvent = WebhookEventOf<'customer.created', Customer>;
export type CustomerUpdatedEvent = WebhookEventOf<'customer.updated', Customer>;
export type CustomerDeletedEvent = WebhookEventOf<'customer.deleted', DeletedCustomerRef>;
export type SubscriptionCreatedEvent = WebhookEventOf<'subscription.created', Subscription>;
export type SubscriptionUpdatedEvent = WebhookEventOf<'subscription.updated', Subscription>;
export type SubscriptionCanceledEvent = WebhookEventOf<'subscription.canceled', Subscription>;
export type EntitlementsUpdatedEvent = WebhookEventOf<'entitlements.updated', EntitlementsChange>;
export type PlanUpdatedEvent = WebhookEventOf<'plan.updated', PlanSnapshot>;
export type UsageLimitReachedEvent = WebhookEventOf<'usage.limit_reached', UsageLimitReached>;
export type CreditGrantCreatedEvent = WebhookEventOf<'credit_grant.created', CreditGrant>;
export type CreditGrantVoidedEvent = WebhookEventOf<'credit_grant.voided', CreditGrant>;
export type OrganizationMemberAddedEvent = WebhookEventOf<
  'organization.member_added',
  OrganizationMembership
>;
export type OrganizationMemberRemovedEvent = WebhookEventOf<
  'organization.member_removed',
  OrganizationMembership
>;
export type OrganizationInvitationCreatedEvent = WebhookEventOf<
  'organization.invitation_created',
  OrganizationInvitationCreated
>;
export type WebhookTestEvent = WebhookEventOf<'webhook.test', WebhookTest>;

/**
 * Every event Tollgate delivers, told apart by `type`: `switch (event.type)` narrows `data`. A test keeps
 * the list equal to the API's `WebhookEventType`.
 */
export type WebhookEvent =
  | CustomerCreatedEvent
  | CustomerUpdatedEvent
  | CustomerDeletedEvent
  | SubscriptionCreatedEvent
  | SubscriptionUpdatedEvent
  | SubscriptionCanceledEvent
  | EntitlementsUpdatedEvent
  | PlanUpdatedEvent
  | UsageLimitReachedEvent
  | CreditGrantCreatedEvent
  | CreditGrantVoidedEvent
  | OrganizationMemberAddedEvent
  | OrganizationMemberRemovedEvent
  | OrganizationInvitationCreatedEvent
  | WebhookTestEvent;
