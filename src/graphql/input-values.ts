import { BREAK, type DocumentNode, GraphQLError, visit } from 'graphql';
import {
  describeInputProblem,
  findInputProblem,
  type InputProblem,
  textProblem,
} from '../core/validation.js';
import type { ResolvedOperation } from './apollo.js';

/**
 * The first argument value written in the document that PostgreSQL or JSON cannot take: a string with
 * a NUL (GraphQL's `\u0000` escape decodes to one) or a number literal too large for a double (JSON
 * scalars would store it as null). GraphQL's own parser already refuses lone-surrogate escapes.
 */
function literalProblem(document: DocumentNode): InputProblem | undefined {
  let found: InputProblem | undefined;
  let at = 'argument';
  const number = (node: { value: string }) => {
    if (Number.isFinite(Number(node.value))) return undefined;
    found = { at, problem: 'is a number too large to be represented (finite doubles only)' };
    return BREAK;
  };
  visit(document, {
    Argument(node) {
      at = `argument "${node.name.value}"`;
    },
    VariableDefinition(node) {
      at = `default value of $${node.variable.name.value}`;
    },
    StringValue(node) {
      const problem = textProblem(node.value);
      if (!problem) return undefined;
      found = { at, problem };
      return BREAK;
    },
    IntValue: number,
    FloatValue: number,
  });
  return found;
}

/**
 * The literal problem of each parsed document, remembered: the GraphQL handler hands every request for the
 * same query text the same cached document, so a known query is walked once, not once per request.
 */
const literalProblems = new WeakMap<DocumentNode, InputProblem | null>();

function cachedLiteralProblem(document: DocumentNode): InputProblem | undefined {
  let problem = literalProblems.get(document);
  if (problem === undefined) {
    problem = literalProblem(document) ?? null;
    literalProblems.set(document, problem);
  }
  return problem ?? undefined;
}

/**
 * Refuses, before execution, argument values and variables that cannot be stored as sent (NUL, lone
 * surrogates, non-finite numbers, nesting beyond the input depth): `BAD_USER_INPUT`, HTTP 400. One
 * check for every transport GraphQL arrives by (POST body, GET query string), so no resolver sees them.
 */
export function inputValuesCheck({ document, variables }: ResolvedOperation<unknown>): void {
  const problem = cachedLiteralProblem(document) ?? findInputProblem(variables ?? {}, 'variables');
  if (!problem) return;
  throw new GraphQLError(describeInputProblem(problem), { extensions: { code: 'BAD_USER_INPUT' } });
}
