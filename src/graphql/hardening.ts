import type { ApolloServerPlugin } from '@apollo/server';
import {
  type ASTNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  GraphQLError,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValidationRule,
} from 'graphql';

/** Deepest selection nesting an operation may have below its data fields. */
export const MAX_DEPTH = 10;
/**
 * Deepest nesting below `__schema` / `__type`: the standard introspection query (what GraphiQL and
 * code generators send) is 15 deep, and every level more is only a way to make the server work harder.
 */
export const MAX_INTROSPECTION_DEPTH = 15;
/** Most work one operation may ask for (see `estimateComplexity`). */
export const MAX_COMPLEXITY = 5000;

const INTROSPECTION_ROOTS = new Set(['__schema', '__type']);

/**
 * Rejects operations nested deeper than `maxDepth` fields (`MAX_INTROSPECTION_DEPTH` under the
 * introspection roots), following fragments.
 */
export function depthLimitRule(maxDepth: number = MAX_DEPTH): ValidationRule {
  return (context) => {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const definition of context.getDocument().definitions) {
      if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
    }
    /** At the root, `measure` picks which root fields count; below the root (`null`) every field does. */
    const depthOf = (
      selectionSet: SelectionSetNode,
      visiting: ReadonlySet<string>,
      measure: 'data' | 'introspection' | null,
    ): number => {
      let deepest = 0;
      for (const selection of selectionSet.selections) {
        if (selection.kind === Kind.FIELD) {
          if (measure && INTROSPECTION_ROOTS.has(selection.name.value) !== (measure === 'introspection'))
            continue;
          const below = selection.selectionSet ? depthOf(selection.selectionSet, visiting, null) : 0;
          deepest = Math.max(deepest, 1 + below);
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          deepest = Math.max(deepest, depthOf(selection.selectionSet, visiting, measure));
        } else {
          const name = selection.name.value;
          const fragment = fragments.get(name);
          // A cycle is reported by GraphQL's own NoFragmentCycles rule; here it only must not loop.
          if (!fragment || visiting.has(name)) continue;
          deepest = Math.max(deepest, depthOf(fragment.selectionSet, new Set([...visiting, name]), measure));
        }
      }
      return deepest;
    };
    const check = (operation: OperationDefinitionNode, measure: 'data' | 'introspection', max: number) => {
      const depth = depthOf(operation.selectionSet, new Set(), measure);
      if (depth <= max) return;
      const what = measure === 'data' ? 'Query' : 'Introspection query';
      context.reportError(
        new GraphQLError(`${what} is too deep: depth ${depth} exceeds the maximum of ${max}`, {
          nodes: [operation as ASTNode],
          extensions: { code: 'QUERY_TOO_DEEP' },
        }),
      );
    };
    return {
      OperationDefinition(operation) {
        check(operation, 'data', maxDepth);
        check(operation, 'introspection', MAX_INTROSPECTION_DEPTH);
      },
    };
  };
}

/** A `limit` or `first` argument (literal or variable): how many children a list field returns. */
function pageSize(field: FieldNode, variables: Readonly<Record<string, unknown>>): number {
  for (const arg of field.arguments ?? []) {
    if (arg.name.value !== 'limit' && arg.name.value !== 'first') continue;
    const value =
      arg.value.kind === Kind.INT
        ? Number(arg.value.value)
        : arg.value.kind === Kind.VARIABLE
          ? variables[arg.value.name.value]
          : undefined;
    if (typeof value === 'number' && Number.isInteger(value) && value > 0) return value;
  }
  return 1;
}

/**
 * Estimated cost of an operation: every field costs 1 plus its children, and a `limit` or `first`
 * argument multiplies the children's cost, since the field returns that many of them. Both branches of
 * `@skip`/`@include` and of fragments on different types are counted: an upper bound.
 */
export function estimateComplexity(
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Readonly<Record<string, unknown>> = {},
): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  const operations: OperationDefinitionNode[] = [];
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
    if (definition.kind === Kind.OPERATION_DEFINITION) operations.push(definition);
  }
  const operation = operationName ? operations.find((o) => o.name?.value === operationName) : operations[0];
  if (!operation) return 0;
  const costOf = (selectionSet: SelectionSetNode, visiting: ReadonlySet<string>): number => {
    let total = 0;
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        const children = selection.selectionSet ? costOf(selection.selectionSet, visiting) : 0;
        total += 1 + children * pageSize(selection, variables);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        total += costOf(selection.selectionSet, visiting);
      } else {
        const fragment = fragments.get(selection.name.value);
        if (!fragment || visiting.has(selection.name.value)) continue;
        total += costOf(fragment.selectionSet, new Set([...visiting, selection.name.value]));
      }
    }
    return total;
  };
  return costOf(operation.selectionSet, new Set());
}

/**
 * Refuses an operation whose estimated cost exceeds `maxComplexity` before any resolver runs. A plugin
 * rather than a validation rule because the cost depends on the variables (e.g. `limit: $n`).
 */
export function complexityLimitPlugin(maxComplexity: number = MAX_COMPLEXITY): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ request, document }) {
          const complexity = estimateComplexity(document, request.operationName, request.variables);
          if (complexity > maxComplexity) {
            throw new GraphQLError(
              `Query is too complex: complexity ${complexity} exceeds the maximum of ${maxComplexity}`,
              { extensions: { code: 'QUERY_TOO_COMPLEX', http: { status: 400 } } },
            );
          }
        },
      };
    },
  };
}
