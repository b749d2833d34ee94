import { ConfigError, loadConfig } from '../../src/config.js';

describe('GraphQL limit settings', () => {
  it('default to the documented limits, anonymous callers tighter', () => {
    expect(loadConfig({}).graphqlLimits).toEqual({
      authenticated: {
        maxDocumentBytes: 16_384,
        maxAliases: 30,
        maxFragmentSpreads: 100,
        maxFields: 500,
        maxComplexity: 5000,
        maxResolverCalls: 20,
      },
      anonymous: {
        maxDocumentBytes: 8192,
        maxAliases: 10,
        maxFragmentSpreads: 40,
        maxFields: 250,
        maxComplexity: 1000,
        maxResolverCalls: 5,
      },
      maxDepth: 10,
      maxConcurrentPerCredential: 1,
      maxQueuedPerCredential: 1000,
      queueTimeoutMs: 5000,
      maxConnectionsPerRequest: 2,
    });
  });

  it('are read from the environment', () => {
    const limits = loadConfig({
      GRAPHQL_MAX_DOCUMENT_BYTES: '32768',
      GRAPHQL_ANONYMOUS_MAX_DOCUMENT_BYTES: '1024',
      GRAPHQL_MAX_ALIASES: '50',
      GRAPHQL_ANONYMOUS_MAX_ALIASES: '2',
      GRAPHQL_MAX_FRAGMENT_SPREADS: '200',
      GRAPHQL_ANONYMOUS_MAX_FRAGMENT_SPREADS: '3',
      GRAPHQL_MAX_FIELDS: '1000',
      GRAPHQL_ANONYMOUS_MAX_FIELDS: '4',
      GRAPHQL_MAX_DEPTH: '12',
      GRAPHQL_MAX_COMPLEXITY: '9000',
      GRAPHQL_ANONYMOUS_MAX_COMPLEXITY: '5',
      GRAPHQL_MAX_RESOLVER_CALLS: '40',
      GRAPHQL_ANONYMOUS_MAX_RESOLVER_CALLS: '6',
      GRAPHQL_MAX_CONCURRENT_PER_CREDENTIAL: '8',
      GRAPHQL_MAX_QUEUED_PER_CREDENTIAL: '0',
      GRAPHQL_QUEUE_TIMEOUT_MS: '250',
      GRAPHQL_MAX_CONNECTIONS_PER_REQUEST: '3',
    }).graphqlLimits;
    expect(limits).toEqual({
      authenticated: {
        maxDocumentBytes: 32_768,
        maxAliases: 50,
        maxFragmentSpreads: 200,
        maxFields: 1000,
        maxComplexity: 9000,
        maxResolverCalls: 40,
      },
      anonymous: {
        maxDocumentBytes: 1024,
        maxAliases: 2,
        maxFragmentSpreads: 3,
        maxFields: 4,
        maxComplexity: 5,
        maxResolverCalls: 6,
      },
      maxDepth: 12,
      maxConcurrentPerCredential: 8,
      maxQueuedPerCredential: 0,
      queueTimeoutMs: 250,
      maxConnectionsPerRequest: 3,
    });
  });

  it('refuses values that would switch a limit off or make no sense, naming each', () => {
    expect(() =>
      loadConfig({ GRAPHQL_MAX_ALIASES: '0', GRAPHQL_MAX_CONNECTIONS_PER_REQUEST: 'many' }),
    ).toThrow(
      new ConfigError(
        'Invalid configuration: GRAPHQL_MAX_ALIASES: Too small: expected number to be >0; ' +
          'GRAPHQL_MAX_CONNECTIONS_PER_REQUEST: Invalid input: expected number, received NaN',
      ),
    );
  });
});
