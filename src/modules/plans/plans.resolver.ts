import { Arg, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import { sentArgs } from '../../graphql/args.js';
import type { GraphQLContext } from '../../graphql/context.js';
import { PlanInput, PlanPriceInput, PlanPriceType, PlanType } from './plan.type.js';
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

  @FieldResolver(() => PlanPriceType, {
    nullable: true,
    description:
      'The price checkout sells, as Stripe has it (amount, currency, interval); null for a free plan',
  })
  async price(@Root() plan: PlanType): Promise<PlanPriceType | null> {
    const price = await this.plansService.priceOf(plan.stripePriceId);
    return price ? PlanPriceType.from(price) : null;
  }

  @Mutation(() => PlanPriceType, {
    description: 'Creates a recurring price on a new Stripe product, for a plan to sell (admin token only)',
  })
  async createPlanPrice(
    @Arg('input', () => PlanPriceInput) input: PlanPriceInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<PlanPriceType> {
    const { productName, unitAmount, currency, interval } = input;
    return PlanPriceType.from(
      await this.plansService.createPlanPrice(
        ctx.principal,
        sentArgs({ productName, unitAmount, currency, interval }),
      ),
    );
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
