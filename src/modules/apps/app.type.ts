import { GraphQLDateTimeISO } from 'graphql-scalars';
import { Field, ID, InputType, Int, ObjectType, registerEnumType } from 'type-graphql';
import type { ApiKey } from './api-key.entity.js';
import type { App } from './app.entity.js';

export enum TrialPaymentMethodEnum {
  require_payment_method = 'require_payment_method',
  no_payment_method = 'no_payment_method',
}
registerEnumType(TrialPaymentMethodEnum, {
  name: 'TrialPaymentMethod',
  description: 'Whether checkout collects a payment method for a plan with a trial',
});

@ObjectType('AppSettings')
export class AppSettingsType {
  @Field({ description: 'Create a customer on the first magic-link request for an unknown e-mail' })
  autoCreateCustomer!: boolean;
  @Field({ description: 'Lifetime of a magic link, in minutes' })
  magicLinkExpiryMinutes!: number;
  @Field(() => Int, { description: 'Lifetime of an organization invitation, in hours (default 168)' })
  invitationExpiryHours!: number;
  @Field({ description: 'Allowed callback URL patterns, one per line' })
  allowedCallbackUrls!: string;
  @Field(() => String, { nullable: true })
  customVerificationUrl!: string | null;
  @Field(() => TrialPaymentMethodEnum)
  trialPaymentMethod!: TrialPaymentMethodEnum;
  @Field()
  organizationsEnabled!: boolean;
  @Field({
    description:
      'Let a customer or organization with a live subscription check out again for another one (add-ons); false: checkout answers 409 and the plan is changed instead',
  })
  allowMultipleSubscriptions!: boolean;
  @Field({ description: 'Lifetime of a customer session token, in seconds' })
  sessionTtlSeconds!: number;
  @Field(() => Int, { description: 'Lifetime of an entitlement token, in seconds (30–3600)' })
  entitlementTokenTtlSeconds!: number;
}

@ObjectType('ApiKey')
export class ApiKeyType {
  @Field(() => ID)
  id!: string;
  @Field({ description: 'The first characters of the key, to recognise it; never the whole secret' })
  prefix!: string;
  @Field(() => String, { nullable: true, description: 'What the operator calls the key; null when unnamed' })
  name!: string | null;
  @Field(() => GraphQLDateTimeISO)
  createdAt!: Date;
  @Field(() => GraphQLDateTimeISO, { nullable: true })
  lastUsedAt!: Date | null;
  @Field(() => GraphQLDateTimeISO, { nullable: true })
  revokedAt!: Date | null;

  static from(key: ApiKey): ApiKeyType {
    return Object.assign(new ApiKeyType(), {
      id: key.id,
      prefix: key.prefix,
      name: key.name,
      createdAt: key.createdAt,
      lastUsedAt: key.lastUsedAt,
      revokedAt: key.revokedAt,
    });
  }
}

@ObjectType('App')
export class AppType {
  @Field(() => ID)
  id!: string;
  @Field()
  name!: string;
  @Field(() => AppSettingsType)
  settings!: AppSettingsType;
  @Field(() => GraphQLDateTimeISO)
  createdAt!: Date;
  @Field(() => GraphQLDateTimeISO)
  updatedAt!: Date;

  static from(app: App): AppType {
    const settings = Object.assign(new AppSettingsType(), {
      autoCreateCustomer: app.autoCreateCustomer,
      magicLinkExpiryMinutes: app.magicLinkExpiryMinutes,
      invitationExpiryHours: app.invitationExpiryHours,
      allowedCallbackUrls: app.allowedCallbackUrls,
      customVerificationUrl: app.customVerificationUrl,
      trialPaymentMethod: app.trialPaymentMethod as TrialPaymentMethodEnum,
      organizationsEnabled: app.organizationsEnabled,
      allowMultipleSubscriptions: app.allowMultipleSubscriptions,
      sessionTtlSeconds: app.sessionTtlSeconds,
      entitlementTokenTtlSeconds: app.entitlementTokenTtlSeconds,
    });
    return Object.assign(new AppType(), {
      id: app.id,
      name: app.name,
      settings,
      createdAt: app.createdAt,
      updatedAt: app.updatedAt,
    });
  }
}

@ObjectType('CreateAppPayload')
export class CreateAppPayload {
  @Field(() => AppType)
  app!: AppType;
  @Field({ description: 'The first API key of the app. Shown once: store it now.' })
  apiKey!: string;
}

@ObjectType('CreateApiKeyPayload')
export class CreateApiKeyPayload {
  @Field({ description: 'The API key secret. Shown once: store it now.' })
  apiKey!: string;
  @Field(() => ApiKeyType)
  key!: ApiKeyType;
}

@InputType('AppSettingsInput')
export class AppSettingsInput {
  @Field({ nullable: true })
  autoCreateCustomer?: boolean;
  @Field({ nullable: true })
  magicLinkExpiryMinutes?: number;
  @Field(() => Int, { nullable: true })
  invitationExpiryHours?: number;
  @Field({ nullable: true })
  allowedCallbackUrls?: string;
  @Field(() => String, { nullable: true, description: 'null removes the custom verification URL' })
  customVerificationUrl?: string | null;
  @Field(() => TrialPaymentMethodEnum, { nullable: true })
  trialPaymentMethod?: TrialPaymentMethodEnum;
  @Field({ nullable: true })
  organizationsEnabled?: boolean;
  @Field({ nullable: true })
  allowMultipleSubscriptions?: boolean;
  @Field({ nullable: true })
  sessionTtlSeconds?: number;
  @Field(() => Int, { nullable: true })
  entitlementTokenTtlSeconds?: number;
}

@InputType('CreateAppInput')
export class CreateAppInput extends AppSettingsInput {
  @Field()
  name!: string;
}

@ObjectType('CallbackUrlCheck')
export class CallbackUrlCheckType {
  @Field({ description: "Whether the app's login and checkout flows accept the URL as a callback" })
  allowed!: boolean;
  @Field(() => String, {
    nullable: true,
    description:
      'The pattern that allows it; null when none does or when http://localhost is (always allowed)',
  })
  matchedPattern!: string | null;

  static from(check: { allowed: boolean; matchedPattern: string | null }): CallbackUrlCheckType {
    return Object.assign(new CallbackUrlCheckType(), check);
  }
}
