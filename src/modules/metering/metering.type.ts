import { GraphQLDateTimeISO, GraphQLJSONObject } from 'graphql-scalars';
import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import type { Metadata } from '../customers/customer.entity.js';
import type { Balance, CreditGrant } from './ledger.js';
import type { UsageResult } from './metering.presenter.js';

@ObjectType('Balance', { description: "A metered feature's live balance in a context" })
export class BalanceType {
  @Field()
  feature!: string;
  @Field(() => Int, { description: "This period's allowance (the plan's limit)" })
  limit!: number;
  @Field(() => Int, { description: 'Active grants and the rollover from the previous period' })
  granted!: number;
  @Field(() => Int, { description: 'Consumed this period (refunds deducted)' })
  used!: number;
  @Field(() => Int, { description: 'What the unspent active buckets hold' })
  remaining!: number;
  @Field(() => Int, {
    description: 'Consumed past the balance this period (a feature with overage), billed per unit',
  })
  overage!: number;
  @Field(() => GraphQLDateTimeISO, { nullable: true, description: 'null for a feature that never resets' })
  resetsAt!: Date | null;

  static from(balance: Balance): BalanceType {
    return Object.assign(new BalanceType(), balance);
  }
}

@ObjectType('UsageResult', { description: 'A consumption: recorded when allowed, else nothing recorded' })
export class UsageResultType {
  @Field(() => ID, { nullable: true, description: 'use_…; null when not allowed' })
  id!: string | null;
  @Field()
  allowed!: boolean;
  @Field(() => String, { nullable: true })
  feature!: string | null;
  @Field(() => Int, { nullable: true })
  amount!: number | null;
  @Field(() => BalanceType, { nullable: true, description: 'null when the plan lacks the feature' })
  balance!: BalanceType | null;

  static from(result: UsageResult): UsageResultType {
    return Object.assign(new UsageResultType(), {
      id: result.allowed ? result.id : null,
      allowed: result.allowed,
      feature: result.allowed ? result.feature : null,
      amount: result.allowed ? result.amount : null,
      balance: result.balance === null ? null : BalanceType.from(result.balance),
    });
  }
}

@ObjectType('CreditGrant')
export class CreditGrantType {
  @Field(() => ID, { description: 'grant_…' })
  id!: string;
  @Field(() => ID, { nullable: true })
  customerId!: string | null;
  @Field(() => ID, { nullable: true })
  organizationId!: string | null;
  @Field()
  feature!: string;
  @Field(() => Int)
  amount!: number;
  @Field(() => Int, { description: 'What is left of it now: 0 once voided or expired' })
  remaining!: number;
  @Field(() => Int, { description: 'Burn-down priority: lower first (0–100)' })
  priority!: number;
  @Field(() => GraphQLDateTimeISO, { nullable: true })
  expiresAt!: Date | null;
  @Field(() => String, { nullable: true })
  description!: string | null;
  @Field(() => GraphQLDateTimeISO, { nullable: true })
  voidedAt!: Date | null;
  @Field(() => GraphQLDateTimeISO)
  createdAt!: Date;

  static from(grant: CreditGrant): CreditGrantType {
    return Object.assign(new CreditGrantType(), grant);
  }
}

@InputType('RecordUsageInput')
export class RecordUsageInput {
  @Field()
  feature!: string;
  @Field(() => Int, { nullable: true, description: 'Default 1' })
  amount?: number | null;
  @Field(() => ID, { nullable: true, description: 'API key: exactly one of customerId / organizationId' })
  customerId?: string | null;
  @Field(() => ID, { nullable: true })
  organizationId?: string | null;
  @Field(() => GraphQLJSONObject, { nullable: true })
  metadata?: Metadata | null;
}

@InputType('CreateCreditGrantInput')
export class CreateCreditGrantInput {
  @Field()
  feature!: string;
  @Field(() => Int)
  amount!: number;
  @Field(() => ID, { nullable: true, description: 'Exactly one of customerId / organizationId' })
  customerId?: string | null;
  @Field(() => ID, { nullable: true })
  organizationId?: string | null;
  @Field(() => Int, { nullable: true, description: 'Burn-down priority 0–100, lower first; default 50' })
  priority?: number | null;
  @Field(() => String, { nullable: true, description: 'ISO 8601 date-time; none: never expires' })
  expiresAt?: string | null;
  @Field(() => String, { nullable: true })
  description?: string | null;
}
