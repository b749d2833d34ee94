import { Arg, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import type { GraphQLContext } from '../../graphql/context.js';
import { PlanInput, PlanType } from './plan.type.js';
import type { PlansService } from './plans.service.js';

/** Plans: the operator upserts them; an API key or customer session lists its app's plans. */
@Resolver(() => PlanType)
export class PlansResolver {
  constructor(private readonly plansService: PlansService) {}

  @Query(() => [PlanType], { description: "The app's plans; `appId` is required with the admin token only" })
  async plans(
    @Ctx() ctx: GraphQLContext,
    @Arg('appId', () => ID, { nullable: true }) appId?: string | null,
  ): Promise<PlanType[]> {
    return (await this.plansService.listPlans(ctx.principal, { appId })).map(PlanType.from);
  }

  @Mutation(() => PlanType, { description: 'Creates or changes a plan (admin token only)' })
  async upsertPlan(
    @Arg('appId', () => ID) appId: string,
    @Arg('input', () => PlanInput) input: PlanInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<PlanType> {
    return PlanType.from(
      await this.plansService.upsertPlan(ctx.principal, appId, {
        ...input,
        ...(input.seats ? { seats: { ...input.seats } } : {}),
      }),
    );
  }
}
