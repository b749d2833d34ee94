import { ShapeCache } from '../../src/graphql/request-limits.js';

describe('the cache of measured GraphQL documents', () => {
  it('measures a document and answers the same shape when it is sent again', () => {
    const cache = new ShapeCache(1024);
    const query = '{ a: __typename b: __typename ...F } fragment F on Query { __typename }';
    const first = cache.shapeOf(query, query.length);
    expect(first).toEqual({ aliases: 2, fragmentSpreads: 1, fields: 3, mergedFields: 1 });
    expect(cache.shapeOf(query, query.length)).toBe(first);
  });

  it('remembers that a text does not parse', () => {
    const cache = new ShapeCache(1024);
    expect(cache.shapeOf('{ oops', 6)).toBeNull();
    expect(cache.shapeOf('{ oops', 6)).toBeNull();
    expect(cache.bytes).toBe(6);
  });

  it('keeps no more query text than its budget, dropping the oldest first', () => {
    const cache = new ShapeCache(100);
    const queries = Array.from({ length: 10 }, (_, i) => `{ f${i}: __typename }`);
    for (const q of queries) cache.shapeOf(q, q.length);
    expect(cache.bytes).toBeLessThanOrEqual(100);
    expect(cache.bytes).toBeGreaterThan(100 - queries[0].length);
    const huge = `{ ${'__typename '.repeat(20)}}`;
    expect(cache.shapeOf(huge, huge.length)).toEqual({
      aliases: 0,
      fragmentSpreads: 0,
      fields: 20,
      mergedFields: 20,
    });
    expect(cache.bytes).toBeLessThanOrEqual(100);
  });
});
