import { GraphQLJSONObject } from 'graphql-scalars';
import { Field, Float, Int, ObjectType } from 'type-graphql';
import type { Analytics, AnalyticsPeriod, MovementTotals } from './analytics.service.js';

const MONEY = { description: "In the currency's smallest unit" };

@ObjectType('AnalyticsTotals', {
  description: 'Movements of a range (churn and contraction as positive amounts)',
})
export class AnalyticsTotalsType implements MovementTotals {
  @Field(() => Float, MONEY)
  newMrr!: number;
  @Field(() => Float, MONEY)
  expansionMrr!: number;
  @Field(() => Float, MONEY)
  contractionMrr!: number;
  @Field(() => Float, MONEY)
  churnedMrr!: number;
  @Field(() => Float, MONEY)
  reactivationMrr!: number;
  @Field(() => Int)
  newSubscriptions!: number;
  @Field(() => Int)
  canceledSubscriptions!: number;
  @Field(() => Int)
  trialConversions!: number;

  static from(totals: MovementTotals): AnalyticsTotalsType {
    return Object.assign(new AnalyticsTotalsType(), totals);
  }
}

@ObjectType('AnalyticsPeriod', { description: 'One period: MRR and counts at its end, movements within it' })
export class AnalyticsPeriodType extends AnalyticsTotalsType implements AnalyticsPeriod {
  @Field({ description: "The period's first day in the range (YYYY-MM-DD, UTC)" })
  start!: string;
  @Field(() => Float, MONEY)
  mrr!: number;
  @Field(() => Int)
  activeSubscriptions!: number;
  @Field(() => Int)
  trialingSubscriptions!: number;

  static override from(period: AnalyticsPeriod): AnalyticsPeriodType {
    return Object.assign(new AnalyticsPeriodType(), period);
  }
}

@ObjectType('AnalyticsPlan', { description: "A plan's MRR and paying subscriptions at the range's end" })
export class AnalyticsPlanType {
  @Field({ description: "The plan's id (its slug)" })
  planId!: string;
  @Field(() => Float, MONEY)
  mrr!: number;
  @Field(() => Int)
  activeSubscriptions!: number;
}

@ObjectType('Analytics', {
  description: 'Subscription analytics of an app in one currency, as GET /v1/analytics',
})
export class AnalyticsType {
  @Field(() => String, { nullable: true, description: 'null while the app has no MRR in any currency' })
  currency!: string | null;
  @Field()
  interval!: string;
  @Field(() => [AnalyticsPeriodType])
  periods!: AnalyticsPeriodType[];
  @Field(() => AnalyticsTotalsType)
  totals!: AnalyticsTotalsType;
  @Field(() => [AnalyticsPlanType])
  byPlan!: AnalyticsPlanType[];
  @Field(() => GraphQLJSONObject, { description: 'What each figure means, in words' })
  definitions!: Record<string, string>;

  static from(analytics: Analytics): AnalyticsType {
    return Object.assign(new AnalyticsType(), {
      currency: analytics.currency,
      interval: analytics.interval,
      periods: analytics.periods.map((p) => AnalyticsPeriodType.from(p)),
      totals: AnalyticsTotalsType.from(analytics.totals),
      byPlan: analytics.byPlan.map((p) => Object.assign(new AnalyticsPlanType(), p)),
      definitions: { ...analytics.definitions },
    });
  }
}
