import { GraphQLDateTimeISO } from 'graphql-scalars';
import { Arg, Ctx, ID, Int, Query, Resolver } from 'type-graphql';
import type { GraphQLContext } from '../../graphql/context.js';
import type { AuditService } from './audit.service.js';
import { AuditEventConnectionType } from './audit.type.js';

/** The audit log, for operators and the admin token (AuditService checks). */
@Resolver()
export class AuditResolver {
  constructor(private readonly audit: AuditService) {}

  @Query(() => AuditEventConnectionType, {
    description: 'Audited writes, newest first; every filter optional (operator events have no app)',
  })
  async auditEvents(
    @Ctx() ctx: GraphQLContext,
    @Arg('appId', () => ID, { nullable: true }) appId?: string | null,
    @Arg('first', () => Int, { nullable: true }) first?: number | null,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
    @Arg('actorId', () => ID, { nullable: true }) actorId?: string | null,
    @Arg('action', () => String, { nullable: true }) action?: string | null,
    @Arg('targetId', () => ID, { nullable: true }) targetId?: string | null,
    @Arg('since', () => GraphQLDateTimeISO, { nullable: true }) since?: Date | null,
    @Arg('until', () => GraphQLDateTimeISO, { nullable: true }) until?: Date | null,
  ): Promise<AuditEventConnectionType> {
    const input = Object.fromEntries(
      Object.entries({ appId, first, after, actorId, action, targetId, since, until }).filter(
        ([, value]) => value !== null && value !== undefined,
      ),
    );
    return AuditEventConnectionType.from(await this.audit.listAuditEvents(ctx.principal, input));
  }
}
