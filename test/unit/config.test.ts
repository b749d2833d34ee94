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
        'Invalid configuration: missing required variables for NODE_ENV=production: DATABASE_URL, ADMIN_TOKEN, PUBLIC_BASE_URL, STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET, SMTP_URL, MAIL_FROM',
      ),
    );
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
    ).toThrow('missing required variables for NODE_ENV=production: STRIPE_WEBHOOK_SECRET, MAIL_FROM');
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
