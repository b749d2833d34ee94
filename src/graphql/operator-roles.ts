import { GraphQLError } from 'graphql';
import { ForbiddenError } from '../core/errors.js';
import { requireWrite } from '../core/principal.js';
import type { ResolvedOperation } from './apollo.js';
import type { GraphQLContext } from './context.js';

/**
 * A viewer's mutation is refused (403) before any of it runs, whichever mutation it is: every write of
 * the API is a mutation, so a new one cannot forget the rule. The rule itself is the core's
 * (`requireWrite`); reads that would show a secret exist only as a mutation's answer.
 */
export function viewerReadsOnly({ operation, contextValue }: ResolvedOperation<GraphQLContext>): void {
  if (operation.operation !== 'mutation') return;
  try {
    requireWrite(contextValue.principal);
  } catch (error) {
    if (!(error instanceof ForbiddenError)) throw error;
    throw new GraphQLError(error.message, {
      originalError: error,
      extensions: { code: 'FORBIDDEN', http: { status: 403 } },
    });
  }
}
