import {
  type ASTNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  GraphQLError,
  type GraphQLField,
  type GraphQLSchema,
  getNamedType,
  getNullableType,
  isCompositeType,
  isListType,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValidationRule,
} from 'graphql';
import type { ResolvedOperation } from './apollo.js';

/** Deepest selection nesting an operation may have below its data fields. */
export const MAX_DEPTH = 10;
/**
 * Deepest nesting below `__schema` / `__type`: the standard introspection query (what GraphiQL and
 * code generators send) is 15 deep, and every level more is only a way to make the server work harder.
 */
export const MAX_INTROSPECTION_DEPTH = 15;
/** Most work one operation may ask for (see `estimateCost`). */
export const MAX_COMPLEXITY = 5000;
/** What a paged field returns when the caller names no `limit`/`first` (the API's documented default). */
export const DEFAULT_PAGE_SIZE = 20;
/**
 * What an unpaged list (a customer's subscriptions, an app's API keys) is assumed to hold. Such lists
 * belong to one parent and stay short; counting them as a full page would refuse ordinary queries.
 */
export const UNPAGED_LIST_SIZE = 10;

const INTROSPECTION_ROOTS = new Set(['__schema', '__type']);

/**
 * Nested fields served by a resolver of their own, and how it reads: once per parent object (one
 * service call each), or batched through a request dataloader (one call however many parents). Root
 * fields always make one service call each. A test compares this table with the schema's field resolvers.
 */
export const FIELD_RESOLVERS: Readonly<Record<string, 'perParent' | 'batched'>> = {
  'App.apiKeys': 'perParent',
  'Organization.members': 'perParent',
  'Customer.subscriptions': 'batched',
  // A call to Stripe for each plan that sells a price.
  'Plan.price': 'perParent',
};

/**
 * Counts the steps the depth and cost walks take, so tests can prove the work is linear in the document
 * (every selection node visited, and every fragment body entered) without timing anything.
 */
export interface WalkCounter {
  selections: number;
  fragmentWalks: number;
}

function fragmentsOf(document: DocumentNode): Map<string, FragmentDefinitionNode> {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  return fragments;
}

type DepthMeasure = 'data' | 'introspection' | null;

/**
 * Rejects operations nested deeper than `maxDepth` fields (`MAX_INTROSPECTION_DEPTH` under the
 * introspection roots), following fragments. Each fragment is measured once per document and measure
 * and its depth reused at every spread, so the work is linear in the document however fragments nest.
 */
export function depthLimitRule(maxDepth: number = MAX_DEPTH, counter?: WalkCounter): ValidationRule {
  return (context) => {
    const fragments = fragmentsOf(context.getDocument());
    const memo = new Map<string, number>();
    const visiting = new Set<string>();
    /** At the root, `measure` picks which root fields count; below the root (`null`) every field does. */
    const depthOf = (selectionSet: SelectionSetNode, measure: DepthMeasure): number => {
      let deepest = 0;
      for (const selection of selectionSet.selections) {
        if (counter) counter.selections++;
        if (selection.kind === Kind.FIELD) {
          if (measure && INTROSPECTION_ROOTS.has(selection.name.value) !== (measure === 'introspection'))
            continue;
          const below = selection.selectionSet ? depthOf(selection.selectionSet, null) : 0;
          deepest = Math.max(deepest, 1 + below);
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          deepest = Math.max(deepest, depthOf(selection.selectionSet, measure));
        } else {
          deepest = Math.max(deepest, fragmentDepth(selection.name.value, measure));
        }
      }
      return deepest;
    };
    const fragmentDepth = (name: string, measure: DepthMeasure): number => {
      const key = `${name}\u0000${measure}`;
      const known = memo.get(key);
      if (known !== undefined) return known;
      const fragment = fragments.get(name);
      // A cycle is reported by GraphQL's own NoFragmentCycles rule; here it only must not loop.
      if (!fragment || visiting.has(name)) return 0;
      if (counter) counter.fragmentWalks++;
      visiting.add(name);
      const depth = depthOf(fragment.selectionSet, measure);
      visiting.delete(name);
      memo.set(key, depth);
      return depth;
    };
    const check = (operation: OperationDefinitionNode, measure: 'data' | 'introspection', max: number) => {
      const depth = depthOf(operation.selectionSet, measure);
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

/**
 * A `limit` or `first` argument's value (literal or variable), when the caller gave a usable one.
 * `onVariable` is told when the answer came from (or was looked up in) the variables.
 */
function givenPageSize(
  field: FieldNode,
  variables: Readonly<Record<string, unknown>>,
  onVariable: () => void,
): number | undefined {
  for (const arg of field.arguments ?? []) {
    if (arg.name.value !== 'limit' && arg.name.value !== 'first') continue;
    if (arg.value.kind === Kind.VARIABLE) onVariable();
    const value =
      arg.value.kind === Kind.INT
        ? Number(arg.value.value)
        : arg.value.kind === Kind.VARIABLE
          ? variables[arg.value.name.value]
          : undefined;
    if (typeof value === 'number' && Number.isInteger(value) && value > 0) return value;
  }
  return undefined;
}

/** Whether the field pages its result: it has a `limit`/`first` argument in the schema or in the document. */
function isPaged(field: FieldNode, definition: GraphQLField<unknown, unknown> | undefined): boolean {
  if (definition) return definition.args.some((arg) => arg.name === 'limit' || arg.name === 'first');
  return (field.arguments ?? []).some((arg) => arg.name.value === 'limit' || arg.name.value === 'first');
}

export interface Cost {
  /** Estimated size of the answer: every field 1, times the number of objects its parents return. */
  readonly complexity: number;
  /** Service calls (database reads, mostly) the operation makes: see `FIELD_RESOLVERS`. */
  readonly resolverCalls: number;
}

export interface CostOptions {
  /** Without a schema, only `limit`/`first` arguments tell which fields return many objects. */
  readonly schema?: GraphQLSchema;
  readonly counter?: WalkCounter;
}

interface Walk {
  complexity: number;
  calls: number;
}

/**
 * Estimated cost of an operation, in one walk that measures each fragment once per context and reuses
 * the result at every spread (linear in the document). Every field costs 1 plus its children; a field
 * that returns many objects multiplies its children's cost: by its `limit`/`first` argument, else by
 * `DEFAULT_PAGE_SIZE` for a paged field and `UNPAGED_LIST_SIZE` for a plain list (the list directly
 * inside a paged field, e.g. `customers(limit: 5) { data }`, is that same page, not another factor).
 * Aliases are counted as the separate fields they are. Both branches of `@skip`/`@include` and of
 * fragments on different types are counted: an upper bound. Introspection is bounded by the schema,
 * not by data, so its lists are not multiplied.
 */
export function estimateCost(
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Readonly<Record<string, unknown>> = {},
  options: CostOptions = {},
): Cost {
  return walkCost(document, operationName, variables, options).cost;
}

/** `estimateCost`, and whether the result depended on the variables (a page size given by one). */
function walkCost(
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Readonly<Record<string, unknown>>,
  options: CostOptions,
): { cost: Cost; readVariables: boolean } {
  const { schema, counter } = options;
  let readVariables = false;
  const onVariable = () => {
    readVariables = true;
  };
  const fragments = fragmentsOf(document);
  const operations = document.definitions.filter(
    (definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION,
  );
  const operation = operationName ? operations.find((o) => o.name?.value === operationName) : operations[0];
  if (!operation) return { cost: { complexity: 0, resolverCalls: 0 }, readVariables };
  const rootType = schema?.getRootType(operation.operation) ?? undefined;
  const batched = new Set<string>();
  const memo = new Map<string, Walk>();
  const visiting = new Set<string>();

  const fieldCost = (
    field: FieldNode,
    parent: GraphQLCompositeType | undefined,
    insidePage: boolean,
    introspection: boolean,
  ): Walk => {
    const name = field.name.value;
    const inIntrospection = introspection || INTROSPECTION_ROOTS.has(name);
    const definition = parent && 'getFields' in parent ? parent.getFields()[name] : undefined;
    const paged = !inIntrospection && isPaged(field, definition);
    const list = definition !== undefined && isListType(getNullableType(definition.type));
    const factor = inIntrospection
      ? 1
      : (givenPageSize(field, variables, onVariable) ??
        (paged ? DEFAULT_PAGE_SIZE : list && !insidePage ? UNPAGED_LIST_SIZE : 1));
    let calls = 0;
    // `__typename` and the introspection fields are answered from the schema, never by a service.
    if (!inIntrospection && parent !== undefined && !name.startsWith('__')) {
      const resolver = FIELD_RESOLVERS[`${parent.name}.${name}`];
      if (parent === rootType || resolver === 'perParent') calls = 1;
      else if (resolver === 'batched') batched.add(`${parent.name}.${name}`);
    }
    if (!field.selectionSet) return { complexity: 1, calls };
    const type = definition ? getNamedType(definition.type) : undefined;
    const children = selectionCost(
      field.selectionSet,
      type && isCompositeType(type) ? type : undefined,
      paged,
      inIntrospection,
    );
    return { complexity: 1 + children.complexity * factor, calls: calls + children.calls * factor };
  };

  const selectionCost = (
    selectionSet: SelectionSetNode,
    parent: GraphQLCompositeType | undefined,
    insidePage: boolean,
    introspection: boolean,
  ): Walk => {
    const total: Walk = { complexity: 0, calls: 0 };
    for (const selection of selectionSet.selections) {
      if (counter) counter.selections++;
      let part: Walk;
      if (selection.kind === Kind.FIELD) {
        part = fieldCost(selection, parent, insidePage, introspection);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const condition = selection.typeCondition
          ? schema?.getType(selection.typeCondition.name.value)
          : parent;
        const type = condition && isCompositeType(condition) ? condition : undefined;
        part = selectionCost(selection.selectionSet, type, insidePage, introspection);
      } else {
        part = fragmentCost(selection.name.value, insidePage, introspection);
      }
      total.complexity += part.complexity;
      total.calls += part.calls;
    }
    return total;
  };

  const fragmentCost = (name: string, insidePage: boolean, introspection: boolean): Walk => {
    const key = `${name}\u0000${insidePage}\u0000${introspection}`;
    const known = memo.get(key);
    if (known) return known;
    const fragment = fragments.get(name);
    if (!fragment || visiting.has(name)) return { complexity: 0, calls: 0 };
    if (counter) counter.fragmentWalks++;
    const condition = schema?.getType(fragment.typeCondition.name.value);
    visiting.add(name);
    const cost = selectionCost(
      fragment.selectionSet,
      condition && isCompositeType(condition) ? condition : undefined,
      insidePage,
      introspection,
    );
    visiting.delete(name);
    memo.set(key, cost);
    return cost;
  };

  const root = selectionCost(operation.selectionSet, rootType, false, false);
  return { cost: { complexity: root.complexity, resolverCalls: root.calls + batched.size }, readVariables };
}

/**
 * The cost of each operation of each parsed document, for those whose cost no variable decides. The
 * GraphQL handler hands every request for the same query text the same cached document, so the walk of
 * a known query runs once; a page size given by a variable is read again on every request.
 */
class CostCache {
  readonly #byDocument = new WeakMap<DocumentNode, Map<string | null, Cost>>();

  costOf(
    document: DocumentNode,
    operationName: string | null | undefined,
    variables: Readonly<Record<string, unknown>> | undefined,
    schema: GraphQLSchema,
  ): Cost {
    const known = this.#byDocument.get(document)?.get(operationName ?? null);
    if (known) return known;
    const { cost, readVariables } = walkCost(document, operationName, variables ?? {}, { schema });
    if (!readVariables) {
      let byOperation = this.#byDocument.get(document);
      if (!byOperation) {
        byOperation = new Map();
        this.#byDocument.set(document, byOperation);
      }
      byOperation.set(operationName ?? null, cost);
    }
    return cost;
  }
}

/** The complexity part of `estimateCost`. */
export function estimateComplexity(
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Readonly<Record<string, unknown>> = {},
  options: CostOptions = {},
): number {
  return estimateCost(document, operationName, variables, options).complexity;
}

/**
 * Most field selections one response name may merge at one place of a document (see `measureDocument`).
 * GraphQL's rule for overlapping fields compares every pair of them (their arguments, then their
 * sub-selections, pair by pair), so their number squared is its work: 500 `customers(limit: …)` side by
 * side cost it a tenth of a second or more. A real query names a field once at a place, or a few times
 * across the inline fragments of a union and the fragments it spreads there.
 */
export const MAX_MERGED_FIELDS = 16;

/**
 * Most selections (fields, inline fragments, spreads) the merge walk of `measureDocument` may visit:
 * fragments are entered there from each place that spreads them, as the overlapping-fields rule does, so
 * a document may spell out few fields and still merge many. Ten times the largest field budget leaves
 * every legitimate document room.
 */
export const MAX_MERGE_WORK = 5000;

/** How much of each costly construct a document spells out (counted without following fragments). */
export interface DocumentShape {
  readonly aliases: number;
  readonly fragmentSpreads: number;
  readonly fields: number;
  /**
   * The most fields merged under one response name at one place, as GraphQL's overlapping-fields rule
   * merges them: fields of that name in a selection set, its inline fragments and the fragments spread
   * there; below them, the fields their sub-selections merge in turn. Counted up to the point where the
   * walk has visited `MAX_MERGE_WORK` selections: then `Infinity`.
   */
  readonly mergedFields: number;
}

/**
 * One pass over the document's nodes for the counts, which never enters a fragment from a spread (linear
 * in the document); then the merge walk, bounded by `MAX_MERGE_WORK`. Their recursion is as deep as the
 * document nests, which `documentNestingExceeds` bounds before parsing.
 */
export function measureDocument(document: DocumentNode): DocumentShape {
  let aliases = 0;
  let fragmentSpreads = 0;
  let fields = 0;
  const count = (selectionSet: SelectionSetNode): void => {
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        fields++;
        if (selection.alias) aliases++;
        if (selection.selectionSet) count(selection.selectionSet);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        count(selection.selectionSet);
      } else {
        fragmentSpreads++;
      }
    }
  };
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION || definition.kind === Kind.FRAGMENT_DEFINITION) {
      count(definition.selectionSet);
    }
  }
  return { aliases, fragmentSpreads, fields, mergedFields: mergedFieldsOf(document) };
}

class MergeWorkExceeded extends Error {}

/** `DocumentShape.mergedFields`. */
function mergedFieldsOf(document: DocumentNode): number {
  const fragments = fragmentsOf(document);
  let mergedFields = 0;
  let work = 0;
  /**
   * The fields of these selection sets, grouped by response name: inline fragments flattened, each
   * fragment spread entered once (as the rule collects a fragment's fields once per place).
   */
  const byResponseName = (selectionSets: readonly SelectionSetNode[]): Map<string, FieldNode[]> => {
    const groups = new Map<string, FieldNode[]>();
    const entered = new Set<string>();
    const collect = (selectionSet: SelectionSetNode): void => {
      for (const selection of selectionSet.selections) {
        if (++work > MAX_MERGE_WORK) throw new MergeWorkExceeded();
        if (selection.kind === Kind.FIELD) {
          const name = selection.alias?.value ?? selection.name.value;
          const group = groups.get(name);
          if (group) group.push(selection);
          else groups.set(name, [selection]);
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          collect(selection.selectionSet);
        } else {
          const fragment = fragments.get(selection.name.value);
          if (!fragment || entered.has(selection.name.value)) continue;
          entered.add(selection.name.value);
          collect(fragment.selectionSet);
        }
      }
    };
    for (const selectionSet of selectionSets) collect(selectionSet);
    return groups;
  };
  const walk = (selectionSets: readonly SelectionSetNode[]): void => {
    for (const group of byResponseName(selectionSets).values()) {
      mergedFields = Math.max(mergedFields, group.length);
      const below = group.flatMap((field) => (field.selectionSet ? [field.selectionSet] : []));
      if (below.length > 0) walk(below);
    }
  };
  try {
    for (const definition of document.definitions) {
      if (definition.kind === Kind.OPERATION_DEFINITION || definition.kind === Kind.FRAGMENT_DEFINITION) {
        walk([definition.selectionSet]);
      }
    }
  } catch (error) {
    if (error instanceof MergeWorkExceeded) return Number.POSITIVE_INFINITY;
    throw error;
  }
  return mergedFields;
}

/** What the cost check needs to know of a request's caller. */
export interface CostBudget {
  readonly maxComplexity: number;
  readonly maxResolverCalls: number;
}

/**
 * Refuses an operation whose estimated cost exceeds the caller's budget before any resolver runs. A check
 * of the resolved operation rather than a validation rule because the cost depends on the variables
 * (e.g. `limit: $n`).
 */
export function complexityLimit<TContext>(
  budgetOf: (context: TContext) => CostBudget = () => ({
    maxComplexity: MAX_COMPLEXITY,
    maxResolverCalls: Number.POSITIVE_INFINITY,
  }),
): (operation: ResolvedOperation<TContext>) => void {
  const costs = new CostCache();
  return ({ document, operationName, variables, schema, contextValue }) => {
    const budget = budgetOf(contextValue);
    const cost = costs.costOf(document, operationName, variables, schema);
    if (cost.complexity > budget.maxComplexity) {
      throw new GraphQLError(
        `Query is too complex: complexity ${cost.complexity} exceeds the maximum of ${budget.maxComplexity}`,
        { extensions: { code: 'QUERY_TOO_COMPLEX' } },
      );
    }
    if (cost.resolverCalls > budget.maxResolverCalls) {
      throw new GraphQLError(
        `Query is too expensive: ${cost.resolverCalls} resolver calls (root fields and per-parent ` +
          `lists, aliases included) exceed the maximum of ${budget.maxResolverCalls}`,
        { extensions: { code: 'QUERY_TOO_EXPENSIVE' } },
      );
    }
  };
}
