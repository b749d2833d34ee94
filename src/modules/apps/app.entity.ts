import type { Opt } from '@mikro-orm/core';
import { Entity, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';

export type TrialPaymentMethod = 'require_payment_method' | 'no_payment_method';

/** An application whose end users Tollgate manages; the unit of tenant isolation. */
@Entity({ tableName: 'app' })
export class App {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @Property({ type: 'text' })
  name!: string;

  @Property({ type: 'boolean', default: true })
  autoCreateCustomer: Opt<boolean> = true;

  @Property({ type: 'integer', default: 15 })
  magicLinkExpiryMinutes: Opt<number> = 15;

  /** Lifetime of an organization invitation; an expired one no longer holds a seat. */
  @Property({ type: 'integer', default: 168 })
  invitationExpiryHours: Opt<number> = 168;

  /** One pattern per line; see callback-url.ts. */
  @Property({ type: 'text', default: '' })
  allowedCallbackUrls: Opt<string> = '';

  @Property({ type: 'text', nullable: true })
  customVerificationUrl: string | null = null;

  @Property({ type: 'text', default: 'require_payment_method' })
  trialPaymentMethod: Opt<TrialPaymentMethod> = 'require_payment_method';

  @Property({ type: 'boolean', default: false })
  organizationsEnabled: Opt<boolean> = false;

  /**
   * False: a subject with a live subscription changes plan instead of checking out again. True for apps
   * that sell add-ons, where one subject holds several subscriptions.
   */
  @Property({ type: 'boolean', default: false })
  allowMultipleSubscriptions: Opt<boolean> = false;

  @Property({ type: 'integer', default: 2592000 })
  sessionTtlSeconds: Opt<number> = 2592000;

  /** Lifetime of the app's entitlement tokens (see modules/entitlement-tokens). */
  @Property({ type: 'integer', default: 300 })
  entitlementTokenTtlSeconds: Opt<number> = 300;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', defaultRaw: 'now()', onUpdate: () => new Date() })
  updatedAt: Opt<Date> = new Date();
}
