import { Arg, Ctx, ID, Query, Resolver } from 'type-graphql';
import { APP_ID_ARG, sentArgs } from '../../graphql/args.js';
import type { GraphQLContext } from '../../graphql/context.js';
import type { AnalyticsService } from './analytics.service.js';
import { AnalyticsType } from './analytics.type.js';

/** Subscription analytics over the same core as `GET /v1/analytics`. */
@Resolver()
export class AnalyticsResolver {
  constructor(private readonly analyticsService: AnalyticsService) {}

  @Query(() => AnalyticsType, {
    description:
      'MRR, subscription counts and MRR movements per period of [from, to] (UTC dates, both inclusive)',
  })
  async analytics(
    @Ctx() ctx: GraphQLContext,
    @Arg('from', { description: 'YYYY-MM-DD' }) from: string,
    @Arg('to', { description: 'YYYY-MM-DD' }) to: string,
    @Arg('interval', () => String, { nullable: true, description: 'day, week or month (default)' })
    interval?: string | null,
    @Arg('currency', () => String, {
      nullable: true,
      description: 'Required only when the app has MRR in several currencies',
    })
    currency?: string | null,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<AnalyticsType> {
    const query = sentArgs({ from, to, interval, currency });
    return AnalyticsType.from(await this.analyticsService.getAnalytics(ctx.principal, query, { appId }));
  }

  @Query(() => [String], { description: 'The currencies the app has MRR in, alphabetically' })
  async analyticsCurrencies(
    @Ctx() ctx: GraphQLContext,
    @Arg('appId', () => ID, { nullable: true, description: APP_ID_ARG }) appId?: string | null,
  ): Promise<string[]> {
    return this.analyticsService.listCurrencies(ctx.principal, { appId });
  }
}
