import { defaultFieldResolver, type GraphQLFieldMap, type GraphQLSchema } from 'graphql';
import type { FieldLimit } from '../modules/rate-limits/rate-limits.service.js';
import type { GraphQLContext } from './context.js';

/**
 * Applies per-field budgets by root field name (graphql-rate-limit, on the shared rate-limit store):
 * each Query or Mutation field named in `limits` is wrapped once, when the schema is built, so resolvers
 * need no decorator to be limited. Only those fields are wrapped: a type-graphql global middleware
 * would run for every field of every answer (each scalar of each object), on the hottest paths too.
 */
export function applyFieldRateLimits(
  schema: GraphQLSchema,
  limits: Readonly<Record<string, FieldLimit>>,
): GraphQLSchema {
  for (const root of [schema.getQueryType(), schema.getMutationType()]) {
    const fields: GraphQLFieldMap<unknown, GraphQLContext> = root?.getFields() ?? {};
    for (const [name, field] of Object.entries(fields)) {
      if (!Object.hasOwn(limits, name)) continue;
      const limit = limits[name]!;
      const resolve = field.resolve ?? defaultFieldResolver;
      field.resolve = async (source, args, context, info) => {
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
