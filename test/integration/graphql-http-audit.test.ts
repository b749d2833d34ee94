import { serverAudits } from 'graphql-http';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The GraphQL-over-HTTP conformance audit of the `graphql-http` package, run against `/graphql` as a client
 * with an API key would see it. Every MUST holds; the audits that fail are SHOULD or MAY ones, named here
 * with why, so a change in conformance (better or worse) shows.
 */
describe('GraphQL over HTTP conformance (graphql-http serverAudits)', () => {
  let server: TestServer;
  let apiKey: string;
  beforeAll(async () => {
    server = await startTestServer();
    ({ apiKey } = await server.createApp());
  });
  afterAll(async () => {
    await server.close();
  });

  it('passes every MUST audit against /graphql with an API key', async () => {
    const fetchWithKey: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${apiKey}`);
      return fetch(input, { ...init, headers });
    };
    const audits = serverAudits({ url: `${server.url}/graphql`, fetchFn: fetchWithKey });
    const results = [];
    for (const audit of audits) results.push(await audit.fn());
    const failed = results
      .filter((result) => result.status !== 'ok')
      .map((result) => ({ name: result.name, reason: 'reason' in result ? result.reason : '' }));
    expect(failed.filter((result) => result.name.startsWith('MUST'))).toEqual([]);
    // Apollo answers request errors with 4xx whatever the client accepts (the audits that want 200 under
    // application/json are SHOULDs) and reads GET variables only as a JSON object.
    expect({ audits: results.length, failed: failed.map((result) => result.name) }).toEqual({
      audits: 61,
      failed: [
        'MAY accept application/x-www-form-urlencoded formatted GET requests',
        'MAY allow URL-encoded JSON string {variables} parameter in GETs when accepting application/graphql-response+json',
        'MAY allow URL-encoded JSON string {variables} parameter in GETs when accepting application/json',
        'SHOULD use 200 status code on document parsing failure when accepting application/json',
        'SHOULD use 200 status code on document validation failure when accepting application/json',
        'SHOULD use a status code of 200 on variable coercion failure when accepting application/json',
      ],
    });
  });
});
