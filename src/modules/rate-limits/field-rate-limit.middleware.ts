import { defaultFieldResolver, type GraphQLSchema } from 'graphql';
import type { GraphQLContext } from '../../graphql/context.js';
import type { FieldLimit, RateLimitsService } from './rate-limits.service.js';

/**
 * One server's per-field budgets (graphql-rate-limit, on the shared rate-limit store). The schema is built
 * once per process while each server has its own store, so the wrapped fields find this instance in the
 * request's container, beside the resolvers.
 */
export class FieldRateLimiter {
  constructor(private readonly rateLimits: RateLimitsService) {}

  consume(call: Parameters<RateLimitsService['consumeField']>[0], limit: FieldLimit): Promise<void> {
    return this.rateLimits.consumeField(call, limit);
  }
}

/**
 * Applies per-field budgets by root field name, so resolvers need no decorator to be limited. Only the
 * named root fields are wrapped: as a type-graphql global middleware this ran for every field of every
 * object, making each scalar of a 100-row page an async middleware chain (tens of milliseconds of event
 * loop per page, taken from every other tenant).
 */
export function applyFieldRateLimits(
  schema: GraphQLSchema,
  limits: Readonly<Record<string, FieldLimit>>,
): GraphQLSchema {
  for (const root of [schema.getQueryType(), schema.getMutationType()]) {
    for (const field of Object.values(root?.getFields() ?? {})) {
      const limit = Object.hasOwn(limits, field.name) ? limits[field.name] : undefined;
      if (!limit) continue;
      const resolve = field.resolve ?? defaultFieldResolver;
      field.resolve = async (source, args, context: GraphQLContext, info) => {
        const limiter: FieldRateLimiter = await context.resolvers.get(FieldRateLimiter, {
          root: source,
          args,
          context,
          info,
        });
        await limiter.consume({ args, info, rateLimitSubject: context.rateLimitSubject }, limit);
        return resolve(source, args, context, info);
      };
    }
  }
  return schema;
}
