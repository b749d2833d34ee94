import type { GraphQLResolveInfo } from 'graphql';
import type { MiddlewareInterface, NextFn, ResolverData } from 'type-graphql';
import type { GraphQLContext } from '../../graphql/context.js';
import type { FieldLimit, RateLimitsService } from './rate-limits.service.js';

function isRootField(info: GraphQLResolveInfo): boolean {
  return info.parentType === info.schema.getMutationType() || info.parentType === info.schema.getQueryType();
}

/**
 * Applies per-field budgets by root field name (graphql-rate-limit, on the shared rate-limit store).
 * Registered once as a global middleware, so resolvers need no decorator to be limited.
 */
export class FieldRateLimits implements MiddlewareInterface<GraphQLContext> {
  constructor(
    private readonly rateLimits: RateLimitsService,
    private readonly limits: Readonly<Record<string, FieldLimit>>,
  ) {}

  async use({ args, info, context }: ResolverData<GraphQLContext>, next: NextFn): Promise<unknown> {
    const limit = Object.hasOwn(this.limits, info.fieldName) ? this.limits[info.fieldName] : undefined;
    if (limit && isRootField(info)) {
      await this.rateLimits.consumeField({ args, info, rateLimitSubject: context.rateLimitSubject }, limit);
    }
    return next();
  }
}
