import { Arg, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import type { GraphQLContext } from '../../graphql/context.js';
import { OperatorSessionType, OperatorType, RemovedType } from './operator.type.js';
import type { OperatorsService } from './operators.service.js';

/** Dashboard operators, enforced in OperatorsService: any operator reads the list; owners manage. */
@Resolver(() => OperatorType)
export class OperatorsResolver {
  constructor(private readonly operatorsService: OperatorsService) {}

  @Query(() => [OperatorType], { description: 'Every operator, oldest first' })
  async operators(@Ctx() ctx: GraphQLContext): Promise<OperatorType[]> {
    return (await this.operatorsService.listOperators(ctx.principal)).map(OperatorType.from);
  }

  @Query(() => [OperatorSessionType], { description: 'Live operator sessions, newest first (owners)' })
  async operatorSessions(@Ctx() ctx: GraphQLContext): Promise<OperatorSessionType[]> {
    return (await this.operatorsService.listSessions(ctx.principal)).map(OperatorSessionType.from);
  }

  @Mutation(() => OperatorType, {
    description: 'Adds an operator (owners); an address already present → 409',
  })
  async addOperator(
    @Arg('email') email: string,
    @Arg('role') role: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<OperatorType> {
    return OperatorType.from(await this.operatorsService.addOperator(ctx.principal, { email, role }));
  }

  @Mutation(() => OperatorType, {
    description: "Changes an operator's role (owners); the last owner stays (409)",
  })
  async changeOperatorRole(
    @Arg('id', () => ID) id: string,
    @Arg('role') role: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<OperatorType> {
    return OperatorType.from(await this.operatorsService.changeOperatorRole(ctx.principal, { id, role }));
  }

  @Mutation(() => RemovedType, {
    description: 'Removes an operator, ending their sessions at once (owners); the last owner stays (409)',
  })
  async removeOperator(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<RemovedType> {
    return Object.assign(new RemovedType(), await this.operatorsService.removeOperator(ctx.principal, id));
  }

  @Mutation(() => RemovedType, { description: 'Ends an operator session at once (owners)' })
  async revokeOperatorSession(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<RemovedType> {
    return Object.assign(new RemovedType(), await this.operatorsService.revokeSession(ctx.principal, id));
  }
}
