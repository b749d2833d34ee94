import { ConfigError, loadConfig } from '../../src/config.js';

describe('configuration', () => {
  it('uses development defaults when nothing is set', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      production: false,
      port: 4000,
      host: '127.0.0.1',
      publicBaseUrl: 'http://localhost:4000',
      databaseUrl: undefined,
      dataDir: '.data',
      rateLimits: { apiKey: 1000, session: 100, publicIp: 60 },
      graphql: { introspection: true, graphiql: true },
    });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.rateLimits)).toBe(true);
  });

  it('refuses production without the required variables, naming every one in one message', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(
      new ConfigError(
        'Invalid configuration: missing required variables for NODE_ENV=production: DATABASE_URL, ADMIN_TOKEN, PUBLIC_BASE_URL, STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET, SMTP_URL, MAIL_FROM, WEBHOOK_SECRET_KEY; NODE_ENV=production requires HTTPS: set TLS_CERT_FILE and TLS_KEY_FILE to terminate TLS here, or TRUST_PROXY when a proxy in front terminates it',
      ),
    );
  });

  it('for a database-only command (migrate, db create), requires only DATABASE_URL in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' }, { scope: 'database' })).toThrow(
      new ConfigError(
        'Invalid configuration: missing required variables for NODE_ENV=production: DATABASE_URL',
      ),
    );
    const config = loadConfig(
      { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/tollgate' },
      { scope: 'database' },
    );
    expect(config).toMatchObject({ production: true, databaseUrl: 'postgres://db/tollgate' });
    // What is set is still validated.
    expect(() =>
      loadConfig(
        { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/tollgate', JOB_QUEUE_SCHEMA: 'Bad-Name' },
        { scope: 'database' },
      ),
    ).toThrow('JOB_QUEUE_SCHEMA must be a lower-case PostgreSQL identifier');
  });

  it('names only the variables still missing and treats empty values as unset', () => {
    expect(() =>
      loadConfig({
        NODE_ENV: 'production',
        DATABASE_URL: 'postgres://db/tollgate',
        ADMIN_TOKEN: 'a-long-enough-admin-token',
        PUBLIC_BASE_URL: 'https://billing.example.com',
        STRIPE_SECRET_KEY: 'sk_live_x',
        STRIPE_WEBHOOK_SECRET: '',
        SMTP_URL: 'smtp://mail.example.com',
      }),
    ).toThrow(
      'missing required variables for NODE_ENV=production: STRIPE_WEBHOOK_SECRET, MAIL_FROM, WEBHOOK_SECRET_KEY',
    );
  });

  it('turns GraphQL introspection and GraphiQL off by default in production', () => {
    const config = loadConfig({
      NODE_ENV: 'production',
      DATABASE_URL: 'postgres://db/tollgate',
      ADMIN_TOKEN: 'a-long-enough-admin-token',
      PUBLIC_BASE_URL: 'https://billing.example.com/',
      STRIPE_SECRET_KEY: 'sk_live_x',
      STRIPE_WEBHOOK_SECRET: 'whsec_x',
      SMTP_URL: 'smtp://mail.example.com',
      MAIL_FROM: 'Billing <billing@example.com>',
      WEBHOOK_SECRET_KEY: 'dGVzdC1vbmx5LXdlYmhvb2stc2VjcmV0LWtleS0zMiE=',
      TRUST_PROXY: '1',
    });
    expect(config.production).toBe(true);
    expect(config.publicBaseUrl).toBe('https://billing.example.com');
    expect(config.graphql).toEqual({ introspection: false, graphiql: false });
  });

  it('reports malformed values by variable name', () => {
    expect(() => loadConfig({ PORT: 'eighty', ADMIN_TOKEN: 'short' })).toThrow(
      /PORT: .*; ADMIN_TOKEN: ADMIN_TOKEN must be at least 16 characters/,
    );
  });
});

describe('database timeouts', () => {
  it('bounds every wait for the database by default, a frozen server failing a request within 5 s', () => {
    const { database } = loadConfig({});
    expect(database).toEqual({
      acquireTimeoutMs: 1500,
      connectTimeoutMs: 1500,
      queryTimeoutMs: 2500,
      statementTimeoutMs: 2000,
      idleInTransactionTimeoutMs: 10000,
      changeFeedTimeoutMs: 1000,
      readinessTimeoutMs: 2000,
    });
    expect(Object.isFrozen(database)).toBe(true);
    // The longest a cached read can wait on a frozen server: the change feed, then a pooled connection,
    // then its query.
    expect(
      database.changeFeedTimeoutMs + database.acquireTimeoutMs + database.queryTimeoutMs,
    ).toBeLessThanOrEqual(5000);
  });

  it('reads each bound from its variable', () => {
    const { database } = loadConfig({
      DATABASE_ACQUIRE_TIMEOUT_MS: '4000',
      DATABASE_CONNECT_TIMEOUT_MS: '3000',
      DATABASE_QUERY_TIMEOUT_MS: '9000',
      DATABASE_STATEMENT_TIMEOUT_MS: '8000',
      DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '60000',
      CHANGE_FEED_TIMEOUT_MS: '500',
      READINESS_TIMEOUT_MS: '750',
    });
    expect(database).toEqual({
      acquireTimeoutMs: 4000,
      connectTimeoutMs: 3000,
      queryTimeoutMs: 9000,
      statementTimeoutMs: 8000,
      idleInTransactionTimeoutMs: 60000,
      changeFeedTimeoutMs: 500,
      readinessTimeoutMs: 750,
    });
  });

  it.each([
    ['DATABASE_QUERY_TIMEOUT_MS', '0'],
    ['DATABASE_ACQUIRE_TIMEOUT_MS', '-1'],
    ['DATABASE_CONNECT_TIMEOUT_MS', '1.5'],
    ['DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS', 'soon'],
    ['CHANGE_FEED_TIMEOUT_MS', '600001'],
    ['READINESS_TIMEOUT_MS', 'Infinity'],
  ])('refuses %s=%s, naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`Invalid configuration: ${name}: `));
  });

  it('refuses a statement timeout the client-side query timeout would cut short', () => {
    expect(() =>
      loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '3000', DATABASE_QUERY_TIMEOUT_MS: '3000' }),
    ).toThrow(
      new ConfigError(
        'Invalid configuration: DATABASE_STATEMENT_TIMEOUT_MS must be below DATABASE_QUERY_TIMEOUT_MS',
      ),
    );
  });

  it('refuses a connect timeout longer than the acquire timeout that contains it', () => {
    expect(() =>
      loadConfig({ DATABASE_CONNECT_TIMEOUT_MS: '2000', DATABASE_ACQUIRE_TIMEOUT_MS: '1000' }),
    ).toThrow('DATABASE_CONNECT_TIMEOUT_MS must not exceed DATABASE_ACQUIRE_TIMEOUT_MS');
  });
});
