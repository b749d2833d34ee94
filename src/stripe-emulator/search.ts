import { invalid } from './errors.js';
import { allow, int, type Obj, type Params, str } from './parameters.js';

/**
 * Stripe's search query language for `/v1/…/search`: clauses `field:value` (exact; for strings,
 * case-insensitive), `field~"sub"` (substring, 3 characters at least), `field>n`, `>=`, `<`, `<=`
 * on numbers, `metadata['key']:'value'`, a leading `-` to negate, joined by `AND` or by `OR` (not both).
 */

interface Clause {
  readonly negated: boolean;
  readonly field: string;
  readonly metadataKey: string | null;
  readonly operator: ':' | '~' | '>' | '>=' | '<' | '<=';
  readonly value: string | number | null;
}

const CLAUSE =
  /^\s*(-?)([a-z_]+)(?:\[(?:'([^']*)'|"([^"]*)")\])?\s*(:|~|>=|<=|>|<)\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|(-?\d+(?:\.\d+)?)|(null))\s*/;

export function parseQuery(
  query: string,
  fields: readonly string[],
  resource: string,
): { clauses: Clause[]; any: boolean } {
  const clauses: Clause[] = [];
  const joins = new Set<string>();
  let rest = query;
  while (true) {
    const match = CLAUSE.exec(rest);
    if (!match)
      throw invalid(
        `We were unable to parse your search query. Try using the format \`field:"value"\`.`,
        'query',
      );
    const [whole, negated, field, single, double, operator, sq, dq, number, nul] = match;
    if (!fields.includes(field!)) {
      throw invalid(
        `Field \`${field}\` is an unsupported search field for resource \`${resource}\`. See http://stripe.com/docs/search#query-fields-for-${resource} for a list of supported fields.`,
        'query',
      );
    }
    const metadataKey = single ?? double ?? null;
    if ((field === 'metadata') !== (metadataKey !== null))
      throw invalid("Metadata fields must name a key: metadata['key'].", 'query');
    const value =
      nul !== undefined
        ? null
        : number !== undefined
          ? Number(number)
          : (sq ?? dq ?? '').replace(/\\(.)/g, '$1');
    if (operator === '~' && (typeof value !== 'string' || value.length < 3)) {
      throw invalid('Substring search (`~`) needs a string of at least 3 characters.', 'query');
    }
    clauses.push({
      negated: negated === '-',
      field: field!,
      metadataKey,
      operator: operator as Clause['operator'],
      value,
    });
    rest = rest.slice(whole.length);
    if (rest.trim() === '') break;
    const join = /^(AND|OR)\s+/.exec(rest);
    if (!join)
      throw invalid(
        `We were unable to parse your search query. Try using the format \`field:"value"\`.`,
        'query',
      );
    joins.add(join[1]!);
    rest = rest.slice(join[0].length);
  }
  if (joins.size > 1) throw invalid('Combining `AND` and `OR` in the same query is not supported.', 'query');
  return { clauses, any: joins.has('OR') };
}

function matches(object: Obj, clause: Clause): boolean {
  const actual: unknown =
    clause.metadataKey !== null ? (object.metadata?.[clause.metadataKey] ?? null) : object[clause.field];
  const { operator, value } = clause;
  let result: boolean;
  if (value === null) result = operator === ':' && (actual === null || actual === undefined);
  else if (operator === ':')
    result =
      typeof actual === 'string' && typeof value === 'string'
        ? actual.toLowerCase() === value.toLowerCase()
        : actual === value;
  else if (operator === '~')
    result = typeof actual === 'string' && actual.toLowerCase().includes(String(value).toLowerCase());
  else {
    const n = Number(actual);
    const v = Number(value);
    result = operator === '>' ? n > v : operator === '>=' ? n >= v : operator === '<' ? n < v : n <= v;
  }
  return clause.negated ? !result : result;
}

/**
 * A `search_result` page of `items` matching `query`, newest first; `page` is the opaque cursor
 * `next_page` handed out.
 */
export function searchPage(
  url: string,
  resource: string,
  fields: readonly string[],
  items: Obj[],
  params: Params,
): Obj {
  allow(params, ['query', 'limit', 'page']);
  const { clauses, any } = parseQuery(str(params, 'query', true)!, fields, resource);
  const limit = int(params, 'limit') ?? 10;
  if (limit < 1 || limit > 100) throw invalid('This value must be between 1 and 100.', 'limit');
  const page = str(params, 'page');
  const offset = page ? Number(Buffer.from(page, 'base64url').toString('utf8')) : 0;
  if (!Number.isInteger(offset) || offset < 0) throw invalid('Invalid page', 'page');
  const found = items
    .map((item, i) => ({ item, i }))
    .filter(({ item }) =>
      any ? clauses.some((c) => matches(item, c)) : clauses.every((c) => matches(item, c)),
    )
    .sort((a, b) => b.item.created - a.item.created || b.i - a.i)
    .map(({ item }) => item);
  const data = found.slice(offset, offset + limit);
  const hasMore = found.length > offset + limit;
  return {
    object: 'search_result',
    data,
    has_more: hasMore,
    next_page: hasMore ? Buffer.from(String(offset + limit), 'utf8').toString('base64url') : null,
    url,
  };
}
