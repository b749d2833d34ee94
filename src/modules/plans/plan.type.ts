import { GraphQLJSONObject } from 'graphql-scalars';
import { Field, ID, InputType, Int, ObjectType, registerEnumType } from 'type-graphql';
import type { ProviderPrice } from '../payments/payment-provider.js';
import type { Features, Plan } from './plan.entity.js';
import type { PlanSeats } from './plan-seats.js';

export enum PlanSeatModeEnum {
  limit = 'limit',
  per_seat = 'per_seat',
}
registerEnumType(PlanSeatModeEnum, {
  name: 'PlanSeatMode',
  description:
    'limit: the plan includes a number of seats; per_seat: the subscription quantity is the seat count',
});

@ObjectType('PlanSeats', { description: "How a plan counts an organization's seats" })
export class PlanSeatsType {
  @Field(() => PlanSeatModeEnum)
  mode!: PlanSeatModeEnum;
  @Field(() => Int, { nullable: true, description: 'limit: the seats the plan includes' })
  included!: number | null;
  @Field(() => Int, { nullable: true, description: 'per_seat: the least quantity billed' })
  min!: number | null;
  @Field(() => Int, { nullable: true, description: 'per_seat: the most seats, when capped' })
  max!: number | null;

  static from(seats: PlanSeats): PlanSeatsType {
    return Object.assign(new PlanSeatsType(), {
      mode: seats.mode as PlanSeatModeEnum,
      included: seats.mode === 'limit' ? seats.included : null,
      min: seats.mode === 'per_seat' ? seats.min : null,
      max: seats.mode === 'per_seat' ? (seats.max ?? null) : null,
    });
  }
}

@InputType('PlanSeatsInput')
export class PlanSeatsInput {
  @Field(() => PlanSeatModeEnum)
  mode!: PlanSeatModeEnum;
  @Field(() => Int, { nullable: true, description: 'limit: the seats the plan includes' })
  included?: number | null;
  @Field(() => Int, { nullable: true, description: 'per_seat: the least quantity billed (default 1)' })
  min?: number | null;
  @Field(() => Int, { nullable: true, description: 'per_seat: the most seats (none: no cap)' })
  max?: number | null;
}

@ObjectType('PlanPrice', { description: 'A Stripe price as a plan sells it' })
export class PlanPriceType {
  @Field(() => ID, { description: 'The Stripe price id (price_…)' })
  id!: string;
  @Field(() => Int, {
    nullable: true,
    description: "Smallest currency unit (cents); null for a price that isn't a fixed amount",
  })
  unitAmount!: number | null;
  @Field({ description: 'ISO code in lowercase, e.g. usd' })
  currency!: string;
  @Field(() => String, {
    nullable: true,
    description: '`day`, `week`, `month` or `year`; null for a one-time price',
  })
  interval!: string | null;
  @Field(() => Int, { nullable: true, description: 'Charged every this many intervals' })
  intervalCount!: number | null;
  @Field({ description: 'Whether Stripe still sells it' })
  active!: boolean;

  static from(price: ProviderPrice): PlanPriceType {
    return Object.assign(new PlanPriceType(), {
      id: price.id,
      unitAmount: price.unitAmount,
      currency: price.currency,
      interval: price.interval,
      intervalCount: price.intervalCount,
      active: price.active,
    });
  }
}

@InputType('PlanPriceInput', { description: 'A recurring price to create at Stripe for a plan to sell' })
export class PlanPriceInput {
  @Field({ description: 'The Stripe product the price is made on (usually the plan name)' })
  productName!: string;
  @Field(() => Int, { description: 'Smallest currency unit, e.g. 1900 for 19.00' })
  unitAmount!: number;
  @Field(() => String, { nullable: true, description: 'ISO code in lowercase (default usd)' })
  currency?: string | null;
  @Field(() => String, { nullable: true, description: '`day`, `week`, `month` (default) or `year`' })
  interval?: string | null;
}

@ObjectType('Plan')
export class PlanType {
  @Field(() => ID, { description: "The operator's id for the plan (a slug such as `pro`)" })
  id!: string;
  @Field()
  name!: string;
  @Field(() => String, {
    nullable: true,
    description: 'The Stripe price checkout sells; null for a free plan',
  })
  stripePriceId!: string | null;
  @Field(() => Int, { description: 'Days of free trial checkout applies' })
  trialDays!: number;
  @Field(() => GraphQLJSONObject, { description: 'Feature name → boolean, number or string' })
  features!: Features;
  @Field({ description: 'The plan of anyone without an entitling subscription (at most one per app)' })
  isDefault!: boolean;
  @Field({ description: 'Sold no more: checkout and plan changes refuse it; subscriptions on it keep it' })
  archived!: boolean;
  @Field(() => PlanSeatsType, { nullable: true, description: 'Seats of an organization on this plan' })
  seats!: PlanSeatsType | null;

  static from(plan: Plan): PlanType {
    return Object.assign(new PlanType(), {
      id: plan.slug,
      name: plan.name,
      stripePriceId: plan.stripePriceId,
      trialDays: plan.trialDays,
      features: { ...plan.features },
      isDefault: plan.isDefault,
      archived: plan.archived,
      seats: plan.seats ? PlanSeatsType.from(plan.seats) : null,
    });
  }
}

@InputType('PlanInput')
export class PlanInput {
  @Field(() => ID, { description: 'Slug: lowercase letters, digits, "-" and "_"' })
  id!: string;
  @Field()
  name!: string;
  @Field(() => String, { nullable: true, description: 'null for a free plan' })
  stripePriceId?: string | null;
  @Field(() => Int, { nullable: true })
  trialDays?: number;
  @Field(() => GraphQLJSONObject, { nullable: true })
  features?: Record<string, unknown>;
  @Field({ nullable: true })
  isDefault?: boolean;
  @Field({
    nullable: true,
    description: 'true: no new checkouts or plan changes to it; subscriptions on it keep it',
  })
  archived?: boolean;
  @Field(() => PlanSeatsInput, {
    nullable: true,
    description: 'Seats of an organization: a cap (limit) or billed per seat; null removes them',
  })
  seats?: PlanSeatsInput | null;
}
