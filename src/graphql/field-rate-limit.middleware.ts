import { defaultFieldResolver, type GraphQLSchema } from 'graphql';
import type { FieldLimit } from '../modules/rate-limits/rate-limits.service.js';
import type { GraphQLContext } from './context.js';

/**
 * Applies per-field budgets by root field name (graphql-rate-limit, on the shared rate-limit store), so
 * resolvers need no decorator to be limited. Only the named root fields are wrapped: as a type-graphql
 * global middleware this ran for every field of every object, making each scalar of a 100-row page an
 * async middleware chain (tens of milliseconds of event loop per page, taken from every other tenant).
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
        await context.services.rateLimits.consumeField(
          { args, info, rateLimitSubject: context.rateLimitSubject },
          limit,
        );
        return resolve(source, args, context, info);
      };
    }
  }
  return schema;
}
