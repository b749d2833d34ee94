import { invalid } from './errors.js';

/**
 * Reading Stripe's form-encoded parameters: every value arrives as a string (or a nested object/array
 * from `a[b]=…`), so each reader checks the shape and answers with Stripe's message and `param`.
 */

/** A Stripe object as stored and answered: plain JSON in Stripe's shape. */
export type Obj = Record<string, any>;
export type Params = Record<string, unknown>;

/** Refuses parameters the emulated endpoint does not know, as Stripe does. */
export function allow(params: Params, names: readonly string[]): void {
  for (const key of Object.keys(params)) {
    if (key !== 'expand' && !names.includes(key)) throw invalid(`Received unknown parameter: ${key}`, key);
  }
}

export function str(params: Params, name: string, required = false): string | undefined {
  const value = params[name];
  if (value === undefined || value === '') {
    if (required) throw invalid(`Missing required param: ${name}.`, name);
    return undefined;
  }
  if (typeof value !== 'string') throw invalid(`Invalid string: ${name}`, name);
  return value;
}

export function int(params: Params, name: string, required = false): number | undefined {
  const value = str(params, name, required);
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value)) throw invalid(`Invalid integer: ${value}`, name);
  return Number(value);
}

export function num(params: Params, name: string): number | undefined {
  const value = str(params, name);
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n)) throw invalid(`Invalid decimal: ${value}`, name);
  return n;
}

export function bool(params: Params, name: string): boolean | undefined {
  const value = str(params, name);
  if (value === undefined) return undefined;
  if (value !== 'true' && value !== 'false') throw invalid(`Invalid boolean: ${value}`, name);
  return value === 'true';
}

export function obj(params: Params, name: string): Params | undefined {
  const value = params[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid(`Invalid object`, name);
  return value as Params;
}

/** Indexed form arrays (`x[0][y]=…`) arrive as arrays or, past the parser's limit, as objects. */
export function arr(params: Params, name: string): Params[] {
  const value = params[name];
  if (value === undefined || value === '') return [];
  if (Array.isArray(value)) return value as Params[];
  if (typeof value === 'object' && value !== null) return Object.values(value) as Params[];
  throw invalid(`Invalid array`, name);
}

/** Stripe's metadata rule: keys sent are set, a key sent empty is removed, `metadata=` clears all. */
export function mergeMetadata(current: Obj, params: Params): Obj {
  if (params.metadata === '') return {};
  const update = obj(params, 'metadata');
  if (!update) return current;
  const next = { ...current };
  for (const [key, value] of Object.entries(update)) {
    if (value === '' || value === null) delete next[key];
    else next[key] = String(value);
  }
  return next;
}

export function httpUrl(value: string, param: string): string {
  try {
    const url = new URL(value.replaceAll('{CHECKOUT_SESSION_ID}', 'x'));
    if (url.protocol === 'http:' || url.protocol === 'https:') return value;
  } catch {
    // fall through to the error
  }
  throw invalid('Not a valid URL', param);
}
