import type { GraphQLResolveInfo } from 'graphql';
import type { MiddlewareFn } from 'type-graphql';
import type { FieldLimit } from '../modules/rate-limits/rate-limits.service.js';
import type { GraphQLContext } from './context.js';

function isRootField(info: GraphQLResolveInfo): boolean {
  return info.parentType === info.schema.getMutationType() || info.parentType === info.schema.getQueryType();
}

/**
 * Applies per-field budgets by root field name (graphql-rate-limit, on the shared rate-limit store).
 * Registered once as a global middleware, so resolvers need no decorator to be limited.
 */
export function fieldRateLimits(limits: Readonly<Record<string, FieldLimit>>): MiddlewareFn<GraphQLContext> {
  return async ({ args, info, context }, next) => {
    const limit = Object.hasOwn(limits, info.fieldName) ? limits[info.fieldName] : undefined;
    if (limit && isRootField(info)) {
      await context.services.rateLimits.consumeField(
        { args, info, rateLimitSubject: context.rateLimitSubject },
        limit,
      );
    }
    return next();
  };
}
