import { type DocumentNode, OverlappingFieldsCanBeMergedRule, parse, validate } from 'graphql';
import type { Pool, PoolClient } from 'pg';
import { getMetadataStorage } from 'type-graphql';
import { loadConfig } from '../../src/config.js';
import { inGraphqlRequest, withConnectionShare } from '../../src/graphql/connection-share.js';
import {
  depthLimitRule,
  estimateCost,
  FIELD_RESOLVERS,
  type WalkCounter,
} from '../../src/graphql/hardening.js';
import { checkDocument, ShapeCache } from '../../src/graphql/request-limits.js';
import { getSchema } from '../../src/graphql-schema.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** `n` fragments, each spreading the previous one twice: walked naively, 2^n fragment bodies. */
function spreadChain(n: number): string {
  let doc = `query { ...F${n} }\nfragment F0 on Query { __typename }\n`;
  for (let i = 1; i <= n; i++) doc += `fragment F${i} on Query { ...F${i - 1} ...F${i - 1} }\n`;
  return doc;
}

/** `n` aliases of a field that reads the database (two statements each: page and count). */
function customerAliases(n: number): string {
  return `{ ${Array.from({ length: n }, (_, i) => `c${i}: customers(limit: 1) { pagination { total } }`).join(' ')} }`;
}

/** `{ __typename }` padded with a comment to exactly `bytes` bytes. */
function paddedTo(bytes: number): string {
  const head = '{ __typename }\n#';
  return head + 'x'.repeat(bytes - head.length);
}

function refusal(code: string, message: string) {
  return { errors: [{ message, extensions: { code, statusCode: 400 } }] };
}

/** A first request records the key's use (off the request path); waits until that write has landed. */
async function settleKeyBookkeeping(server: TestServer, appId: string, apiKey: string): Promise<void> {
  await server.graphql('{ __typename }', {}, apiKey);
  const connection = server.deps.orm.em.fork().getConnection();
  const deadline = Date.now() + 5000;
  for (;;) {
    const rows = await connection.execute(
      'select 1 from api_key where app_id = ? and last_used_at is not null',
      [appId],
    );
    if (rows.length > 0) return;
    if (Date.now() > deadline) throw new Error('the API key use was never recorded');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * The document with every AST node wrapped so that each property read counts one step: validation's
 * work, counted rather than timed (node identity is kept, as the rules' caches need).
 */
function countingReads(document: DocumentNode): { document: DocumentNode; reads: () => number } {
  let reads = 0;
  const wrapped = new WeakMap<object, object>();
  const wrap = <T>(value: T): T => {
    if (typeof value !== 'object' || value === null) return value;
    let proxy = wrapped.get(value);
    if (!proxy) {
      proxy = new Proxy(value, {
        get(target, key, receiver) {
          reads++;
          return wrap(Reflect.get(target, key, receiver));
        },
      });
      wrapped.set(value, proxy);
    }
    return proxy as T;
  };
  return { document: wrap(document), reads: () => reads };
}

/** `n` fields of one response name with different arguments, side by side: ~18 bytes each. */
function sameNameFields(n: number): string {
  return `{${Array.from({ length: n }, (_, i) => ` customers(limit: ${i}) { __typename }`).join('')} }`;
}

/** The same `n` fields spread from fragments of 8 each, where the document spells out few of them at one place. */
function sameNameInFragments(n: number): string {
  const fragments = Math.ceil(n / 8);
  let doc = `{ ${Array.from({ length: fragments }, (_, f) => `...F${f}`).join(' ')} }\n`;
  for (let f = 0; f < fragments; f++) {
    const own = Math.min(8, n - f * 8);
    doc += `fragment F${f} on Query {${Array.from({ length: own }, (_, i) => ` customers(limit: ${f * 8 + i}) { __typename }`).join('')} }\n`;
  }
  return doc;
}

describe('GraphQL validation work is linear in the document', () => {
  it('bounds the overlapping-fields rule: documents of growing same-name field counts are refused before it runs', async () => {
    const schema = await getSchema();
    const budget = loadConfig({}).graphqlLimits.authenticated;
    /** The rule's work on the document, or 0 when the document is refused before validation. */
    const ruleWork = (query: string): number => {
      if (checkDocument(query, budget, new ShapeCache())) return 0;
      const counted = countingReads(parse(query));
      validate(schema, counted.document, [OverlappingFieldsCanBeMergedRule]);
      return counted.reads();
    };
    /** The rule's work with no bound in front of it. */
    const unboundedWork = (query: string): number => {
      const counted = countingReads(parse(query));
      validate(schema, counted.document, [OverlappingFieldsCanBeMergedRule]);
      return counted.reads();
    };
    const counts = [2, 4, 8, 16, 17, 32, 64, 128, 249];
    for (const shape of [sameNameFields, sameNameInFragments]) {
      const ceiling = ruleWork(shape(16));
      expect(ceiling).toBeGreaterThan(0);
      for (const n of counts) {
        // Every document is within the size, alias, spread and field budgets: only the new bound applies.
        expect(Buffer.byteLength(shape(n))).toBeLessThanOrEqual(budget.maxDocumentBytes);
        expect(ruleWork(shape(n))).toBeLessThanOrEqual(ceiling);
      }
      // Without the bound the work grows with the square of the count (~(249/16)² = 240 times): the bound holds it.
      expect(unboundedWork(shape(249))).toBeGreaterThan(50 * ceiling);
    }
  });

  it('refuses a document that merges too many fields, naming the bound', () => {
    const budget = loadConfig({}).graphqlLimits.authenticated;
    expect(checkDocument(sameNameFields(16), budget, new ShapeCache())).toBeUndefined();
    expect(checkDocument(sameNameFields(17), budget, new ShapeCache())).toEqual({
      code: 'QUERY_TOO_MANY_SAME_NAME_FIELDS',
      message: 'Query has too many fields of one response name in one place: 17 exceed the maximum of 16',
    });
    // Spread from fragments, and below a merged field: the same bound.
    expect(checkDocument(sameNameInFragments(17), budget, new ShapeCache())?.code).toBe(
      'QUERY_TOO_MANY_SAME_NAME_FIELDS',
    );
    const below = `{ ${Array.from({ length: 3 }, (_, i) => `customers { data { ${Array.from({ length: 6 }, (_, j) => `metadata(key: "${i}${j}")`).join(' ')} } }`).join(' ')} }`;
    expect(checkDocument(below, budget, new ShapeCache())?.message).toBe(
      'Query has too many fields of one response name in one place: 18 exceed the maximum of 16',
    );
    // Fragments entered from each place that spreads them, as the rule does: bounded work, then refused.
    // 30 places spread a chain of 10 fragments of 15 fields: 180 fields spelled out, 4 500 once spread.
    let chain = `{ ${Array.from({ length: 30 }, (_, i) => `r${i} { ...F0 }`).join(' ')} }\n`;
    for (let f = 0; f < 10; f++) {
      const own = Array.from({ length: 15 }, (_, i) => `f${f}_${i}`).join(' ');
      chain += `fragment F${f} on Query { ${own}${f < 9 ? ` ...F${f + 1}` : ''} }\n`;
    }
    expect(checkDocument(chain, budget, new ShapeCache())).toEqual({
      code: 'QUERY_TOO_MANY_FIELDS',
      message:
        'Query has too many selections once its fragments are spread where they are used: more than 5000',
    });
  });

  it('walks each fragment once in the depth rule, however deeply spreads nest', async () => {
    const schema = await getSchema();
    const work: number[] = [];
    for (let n = 1; n <= 16; n++) {
      const counter: WalkCounter = { selections: 0, fragmentWalks: 0 };
      const errors = validate(schema, parse(spreadChain(n)), [depthLimitRule(10, counter)]);
      expect(errors).toEqual([]);
      // Every fragment body is entered once per measure (data fields, introspection fields).
      expect(counter.fragmentWalks).toBe(2 * (n + 1));
      work.push(counter.selections);
    }
    // One more fragment in the chain adds the same work each time: linear, not doubling.
    const steps = work.slice(1).map((w, i) => w - work[i]);
    expect(new Set(steps)).toEqual(new Set([steps[0]]));
    expect(steps[0]).toBe(4);
  });

  it('walks each fragment once in the cost estimate, and still counts every spread', async () => {
    const schema = await getSchema();
    const work: number[] = [];
    for (let n = 1; n <= 16; n++) {
      const counter: WalkCounter = { selections: 0, fragmentWalks: 0 };
      const cost = estimateCost(parse(spreadChain(n)), undefined, {}, { schema, counter });
      // The estimate is what a naive walk would give: 2^n `__typename` fields.
      expect(cost).toEqual({ complexity: 2 ** n, resolverCalls: 0 });
      expect(counter.fragmentWalks).toBe(n + 1);
      work.push(counter.selections);
    }
    const steps = work.slice(1).map((w, i) => w - work[i]);
    expect(new Set(steps)).toEqual(new Set([2]));
  });

  it('counts aliases, page sizes and per-parent lists in the cost', async () => {
    const schema = await getSchema();
    const cost = (query: string, variables = {}) =>
      estimateCost(parse(query), undefined, variables, { schema });
    // Without `limit` a page holds the documented default of 20; `data` is that page, not another factor.
    expect(cost('{ customers { data { id } } }')).toEqual({ complexity: 1 + 20 * 2, resolverCalls: 1 });
    expect(cost('query($n: Int) { customers(limit: $n) { data { id } } }', { n: 3 })).toEqual({
      complexity: 1 + 3 * 2,
      resolverCalls: 1,
    });
    // Each alias is a call of its own.
    expect(cost(customerAliases(3))).toEqual({ complexity: 3 * (1 + 1 * 2), resolverCalls: 3 });
    // A batched nested list is one call however many parents; a per-parent one is one call per parent.
    expect(cost('{ customers(limit: 50) { data { subscriptions { id } } } }')).toEqual({
      complexity: 1 + 50 * (1 + 1 + 10 * 1),
      resolverCalls: 2,
    });
    expect(cost('{ apps { apiKeys { id } } }')).toEqual({
      complexity: 1 + 10 * (1 + 10 * 1),
      resolverCalls: 1 + 10,
    });
  });

  it('knows how every nested field resolver of the schema reads (a new one must be classified)', async () => {
    await getSchema();
    const storage = getMetadataStorage();
    const coordinates = storage.fieldResolvers.map((resolver) => {
      const target = resolver.getObjectType?.();
      const type = storage.objectTypes.find((objectType) => objectType.target === target);
      return `${type?.name}.${resolver.schemaName}`;
    });
    expect(coordinates.sort()).toEqual(Object.keys(FIELD_RESOLVERS).sort());
  });
});

describe('GraphQL document caps', () => {
  let server: TestServer;
  let appId: string;
  let apiKey: string;
  beforeAll(async () => {
    server = await startTestServer();
    ({ appId, apiKey } = await server.createApp());
  });
  afterAll(async () => {
    server.deps.orm.config.set('onQuery', (sql: string) => sql);
    await server.close();
  });

  it('refuses a document over the size budget before parsing it; anonymous callers get 8 KiB, others 16 KiB', async () => {
    expect(await server.graphql(paddedTo(8192))).toEqual({
      status: 200,
      body: { data: { __typename: 'Query' } },
    });
    expect(await server.graphql(paddedTo(8193))).toEqual({
      status: 400,
      body: refusal('QUERY_TOO_LARGE', 'Query is too large: 8193 bytes exceed the maximum of 8192'),
    });
    expect(await server.graphql(paddedTo(8193), {}, apiKey)).toEqual({
      status: 200,
      body: { data: { __typename: 'Query' } },
    });
    expect(await server.graphql(paddedTo(16385), {}, apiKey)).toEqual({
      status: 400,
      body: refusal('QUERY_TOO_LARGE', 'Query is too large: 16385 bytes exceed the maximum of 16384'),
    });
    // Size comes first: a huge document that does not even parse is refused for its size.
    expect(await server.graphql(`{ ${'{'.repeat(9000)}`)).toEqual({
      status: 400,
      body: refusal('QUERY_TOO_LARGE', 'Query is too large: 9002 bytes exceed the maximum of 8192'),
    });
    // Multi-byte characters count as the bytes they are.
    const multiByte = `{ __typename }\n#${'é'.repeat(4096)}`;
    expect((await server.graphql(multiByte)).body).toEqual(
      refusal('QUERY_TOO_LARGE', 'Query is too large: 8208 bytes exceed the maximum of 8192'),
    );
  });

  it('marks every GraphQL answer as not to be stored, refusals included', async () => {
    const answered = await server.http.post('/graphql').send({ query: '{ __typename }' });
    expect(answered.status).toBe(200);
    expect(answered.headers['cache-control']).toBe('no-store');
    const invalid = await server.http.post('/graphql').send({ query: '{ nope }' });
    expect(invalid.status).toBe(400);
    expect(invalid.headers['cache-control']).toBe('no-store');
    const tooLarge = await server.http.post('/graphql').send({ query: paddedTo(8193) });
    expect(tooLarge.status).toBe(400);
    expect(tooLarge.headers['cache-control']).toBe('no-store');
  });

  it('applies the caps to GET requests too', async () => {
    const res = await server.http
      .get('/graphql')
      .query({ query: paddedTo(8193) })
      .set('accept', 'application/json')
      .set('apollo-require-preflight', 'true');
    expect(res.status).toBe(400);
    expect(res.body).toEqual(
      refusal('QUERY_TOO_LARGE', 'Query is too large: 8193 bytes exceed the maximum of 8192'),
    );
    // A repeated parameter is read as the GraphQL handler reads it (the first), not skipped as an array.
    const repeated = await server.http
      .get(
        `/graphql?query=${encodeURIComponent(paddedTo(8193))}&query=${encodeURIComponent('{ __typename }')}`,
      )
      .set('accept', 'application/json')
      .set('apollo-require-preflight', 'true');
    expect(repeated.status).toBe(400);
    expect(repeated.body).toEqual(
      refusal('QUERY_TOO_LARGE', 'Query is too large: 8193 bytes exceed the maximum of 8192'),
    );
  });

  it('refuses too many aliases: 10 anonymous, 30 with a credential', async () => {
    const aliases = (n: number) =>
      `{ ${Array.from({ length: n }, (_, i) => `a${i}: __typename`).join(' ')} }`;
    expect((await server.graphql(aliases(10))).status).toBe(200);
    // Twice: the second time the shape comes from the cache of recently measured documents.
    for (let attempt = 0; attempt < 2; attempt++) {
      expect(await server.graphql(aliases(11))).toEqual({
        status: 400,
        body: refusal('QUERY_TOO_MANY_ALIASES', 'Query has too many aliases: 11 exceed the maximum of 10'),
      });
    }
    expect((await server.graphql(aliases(30), {}, apiKey)).status).toBe(200);
    expect(await server.graphql(aliases(31), {}, apiKey)).toEqual({
      status: 400,
      body: refusal('QUERY_TOO_MANY_ALIASES', 'Query has too many aliases: 31 exceed the maximum of 30'),
    });
  });

  it('refuses too many fragment spreads: 40 anonymous, 100 with a credential', async () => {
    const spreads = (n: number) => `{ ${'...F '.repeat(n)}} fragment F on Query { __typename }`;
    expect(await server.graphql(spreads(40))).toEqual({
      status: 200,
      body: { data: { __typename: 'Query' } },
    });
    expect(await server.graphql(spreads(41))).toEqual({
      status: 400,
      body: refusal(
        'QUERY_TOO_MANY_FRAGMENT_SPREADS',
        'Query has too many fragment spreads: 41 exceed the maximum of 40',
      ),
    });
    expect((await server.graphql(spreads(100), {}, apiKey)).status).toBe(200);
    expect((await server.graphql(spreads(101), {}, apiKey)).body).toEqual(
      refusal(
        'QUERY_TOO_MANY_FRAGMENT_SPREADS',
        'Query has too many fragment spreads: 101 exceed the maximum of 100',
      ),
    );
  });

  it('refuses too many fields (what makes the overlapping-fields check quadratic): 250 anonymous, 500 otherwise', async () => {
    // Distinct names (none the schema knows): within the caps they reach validation, which refuses them.
    const fields = (n: number) => `{${Array.from({ length: n }, (_, i) => ` f${i}`).join('')} }`;
    const within = await server.graphql(fields(250));
    expect(within.status).toBe(400);
    expect(within.body.errors?.[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(await server.graphql(fields(251))).toEqual({
      status: 400,
      body: refusal('QUERY_TOO_MANY_FIELDS', 'Query has too many fields: 251 exceed the maximum of 250'),
    });
    expect((await server.graphql(fields(501), {}, apiKey)).body).toEqual(
      refusal('QUERY_TOO_MANY_FIELDS', 'Query has too many fields: 501 exceed the maximum of 500'),
    );
  });

  it('refuses more than 16 fields of one response name at one place, before validating them', async () => {
    const same = (n: number) => `{${' __typename'.repeat(n)} }`;
    expect(await server.graphql(same(16))).toEqual({ status: 200, body: { data: { __typename: 'Query' } } });
    expect(await server.graphql(same(17), {}, apiKey)).toEqual({
      status: 400,
      body: refusal(
        'QUERY_TOO_MANY_SAME_NAME_FIELDS',
        'Query has too many fields of one response name in one place: 17 exceed the maximum of 16',
      ),
    });
  });

  it('answers a deep spread chain at once, with the complexity it stands for', async () => {
    // 19 fragments, 39 spreads: within the anonymous spread cap, 2^19 fields once expanded.
    const res = await server.graphql(spreadChain(19));
    expect(res).toEqual({
      status: 400,
      body: refusal(
        'QUERY_TOO_COMPLEX',
        'Query is too complex: complexity 524288 exceeds the maximum of 1000',
      ),
    });
  });

  it('gives anonymous callers a tighter cost budget (complexity 1000, 5 resolver calls)', async () => {
    const twoPages = `{ a: customers(limit: 100) { data { id email name metadata createdAt updatedAt } }
      b: customers(limit: 100) { data { id email name metadata createdAt updatedAt } } }`;
    expect(await server.graphql(twoPages)).toEqual({
      status: 400,
      body: refusal('QUERY_TOO_COMPLEX', 'Query is too complex: complexity 1402 exceeds the maximum of 1000'),
    });
    const allowed = await server.graphql(twoPages, {}, apiKey);
    expect(allowed.status).toBe(200);
    expect(allowed.body).toEqual({ data: { a: { data: [] }, b: { data: [] } } });

    expect(await server.graphql(customerAliases(6))).toEqual({
      status: 400,
      body: refusal(
        'QUERY_TOO_EXPENSIVE',
        'Query is too expensive: 6 resolver calls (root fields and per-parent lists, aliases included) exceed the maximum of 5',
      ),
    });
    // Five are within the budget, so they run (and the customers service refuses them: no credential).
    expect(await server.graphql(customerAliases(5))).toEqual({
      status: 200,
      body: {
        data: null,
        errors: [
          {
            message: 'Invalid or missing credentials',
            locations: [{ line: 1, column: 3 }],
            path: ['c0'],
            extensions: { code: 'UNAUTHENTICATED', statusCode: 401 },
          },
        ],
      },
    });
  });

  it('refuses many aliases of a database-backed field with 400 before running any of them', async () => {
    await settleKeyBookkeeping(server, appId, apiKey);
    const statements: string[] = [];
    server.deps.orm.config.set('onQuery', (sql: string) => {
      statements.push(sql);
      return sql;
    });
    try {
      const refused = await server.graphql(customerAliases(21), {}, apiKey);
      expect(refused).toEqual({
        status: 400,
        body: refusal(
          'QUERY_TOO_EXPENSIVE',
          'Query is too expensive: 21 resolver calls (root fields and per-parent lists, aliases included) exceed the maximum of 20',
        ),
      });
      // Not one statement ran: no customer was read, and the key, known since the first request, came
      // from the credential cache.
      expect(statements).toEqual([]);

      // What once held the whole pool (hundreds of aliases under the old cost limit) is refused by size.
      const flood = customerAliases(400);
      expect(await server.graphql(flood, {}, apiKey)).toEqual({
        status: 400,
        body: refusal(
          'QUERY_TOO_LARGE',
          `Query is too large: ${flood.length} bytes exceed the maximum of 16384`,
        ),
      });
      expect(statements).toEqual([]);
    } finally {
      server.deps.orm.config.set('onQuery', (sql: string) => sql);
    }
    const allowed = await server.graphql(customerAliases(20), {}, apiKey);
    expect(allowed.status).toBe(200);
    expect(allowed.body.data).toEqual(
      Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`c${i}`, { pagination: { total: 0 } }])),
    );
  });
});

describe('database connections one GraphQL request holds', () => {
  /**
   * `n` searches, each for its own e-mail fragment, so each field runs its own statement. (Aliases of one
   * list share a single read: the first one reads, the others wait for it, so they would hold one
   * connection whatever the cap.)
   */
  function distinctSearches(n: number): string {
    return `{ ${Array.from({ length: n }, (_, i) => `c${i}: customers(email: "nobody-${i}", limit: 1) { pagination { total } }`).join(' ')} }`;
  }

  /**
   * The most connections the GraphQL request held at once while `fn` ran. A checkout counts when it was
   * asked for by the request's own code: the server's background work (the overage sweep it runs at
   * start-up, say) shares the pool, and its checkouts are not the request's.
   */
  async function peakConnections(server: TestServer, fn: () => Promise<unknown>): Promise<number> {
    const pool = (await server.deps.orm.em.getConnection().getNativeClient()) as Pool;
    const gated = pool.connect;
    const held = new WeakSet<PoolClient>();
    let out = 0;
    let peak = 0;
    pool.connect = (async () => {
      const forRequest = inGraphqlRequest();
      const client = await (gated as () => Promise<PoolClient>).call(pool);
      if (forRequest) {
        held.add(client);
        out++;
        peak = Math.max(peak, out);
      }
      return client;
    }) as Pool['connect'];
    const released = (_error: Error | undefined, client: PoolClient) => {
      if (held.delete(client)) out--;
    };
    pool.on('release', released);
    try {
      await fn();
    } finally {
      pool.connect = gated;
      pool.off('release', released);
    }
    return peak;
  }

  async function peakFor(env: Record<string, string>): Promise<{ peak: number; body: unknown }> {
    const server = await startTestServer({ env });
    try {
      const { appId, apiKey } = await server.createApp();
      await settleKeyBookkeeping(server, appId, apiKey);
      let body: unknown;
      const peak = await peakConnections(server, async () => {
        body = (await server.graphql(distinctSearches(20), {}, apiKey)).body;
      });
      return { peak, body };
    } finally {
      await server.close();
    }
  }

  const answer = {
    data: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`c${i}`, { pagination: { total: 0 } }])),
  };

  it('holds at most GRAPHQL_MAX_CONNECTIONS_PER_REQUEST (default 2) of the pool, however many fields run at once', async () => {
    const capped = await peakFor({});
    expect(capped.body).toEqual(answer);
    expect(capped.peak).toBe(2);

    // The same document without the cap takes many connections at once: the cap is what holds it.
    const uncapped = await peakFor({ GRAPHQL_MAX_CONNECTIONS_PER_REQUEST: '20' });
    expect(uncapped.body).toEqual(answer);
    expect(uncapped.peak).toBeGreaterThan(2);
  });

  // pg-pool's own `query` checks out with the callback form of `connect`, which the wrapper once ignored:
  // the call never returned.
  it('leaves the pool’s own query working, outside a request and inside one', async () => {
    const server = await startTestServer();
    try {
      const pool = (await server.deps.orm.em.getConnection().getNativeClient()) as Pool;
      expect((await pool.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
      const inRequest = await withConnectionShare(1, () => pool.query('select 2 as two'));
      expect(inRequest.rows).toEqual([{ two: 2 }]);
    } finally {
      await server.close();
    }
  });
});
