import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { CONFIG_VARIABLES, loadConfig, REQUIRED_IN_PRODUCTION } from '../../src/config.js';
import { PLAIN_HTTP_PATHS } from '../../src/rest/transport-security.js';

/**
 * compose.yaml cannot be run here (no container engine), so it is checked against the code: the
 * services it needs, the variables it sets (each one Tollgate reads, and together a production start
 * that src/config.ts accepts), the release step, the health checks, and what is published.
 */

interface Service {
  image?: string;
  build?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  networks?: string[] | Record<string, { ipv4_address?: string }>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test?: string[]; disable?: boolean };
  configs?: Array<{ source: string; target: string }>;
}

const compose = parse(readFileSync('compose.yaml', 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
  configs: Record<string, { content: string }>;
};
const services = compose.services;
const INSTANCES = ['tollgate-1', 'tollgate-2'];
const TOLLGATE = [...INSTANCES, 'migrate'];

/** What Compose makes of `${NAME:?…}`, `${NAME:-default}` and `$$`, with the operator's values. */
function interpolate(value: string, env: Record<string, string>): string {
  return value.replace(/\$\$|\$\{([A-Z_][A-Z0-9_]*)(?::([?-])([^}]*))?\}/g, (match, name, kind, rest) => {
    if (match === '$$') return '$';
    const set = env[name];
    if (set !== undefined && set !== '') return set;
    if (kind === '?') throw new Error(`compose would refuse to start: ${rest}`);
    return kind === '-' ? rest : '';
  });
}

/** The secrets an operator supplies, as in an `.env` file. */
const OPERATOR = {
  POSTGRES_PASSWORD: 'pg-secret',
  ADMIN_TOKEN: 'admin-token-0123456789',
  STRIPE_SECRET_KEY: 'sk_live_x',
  STRIPE_WEBHOOK_SECRET: 'whsec_x',
  SMTP_URL: 'smtp://user:pass@smtp.example.com:587',
  METRICS_TOKEN: 'metrics-token-0123456789',
  WEBHOOK_SECRET_KEY: 'dGVzdC1vbmx5LXdlYmhvb2stc2VjcmV0LWtleS0zMiE=',
};

function environmentOf(name: string, env: Record<string, string> = OPERATOR): Record<string, string> {
  return Object.fromEntries(
    Object.entries(services[name]!.environment ?? {}).map(([key, value]) => [
      key,
      interpolate(String(value), env),
    ]),
  );
}

describe('compose.yaml', () => {
  it('runs two Tollgate instances, PostgreSQL, Redis, a TLS-terminating proxy and a release step', () => {
    expect(Object.keys(services).sort()).toEqual(
      ['migrate', 'postgres', 'proxy', 'redis', 'tollgate-1', 'tollgate-2'].sort(),
    );
    for (const name of TOLLGATE) expect(services[name]!.build).toBe('.');
    expect(services.postgres!.image).toMatch(/^postgres:\d+/);
    expect(services.redis!.image).toMatch(/^redis:\d+/);
    expect(services.proxy!.image).toMatch(/^caddy:2/);
  });

  it('sets only variables Tollgate reads, and every one production requires', () => {
    for (const name of TOLLGATE) {
      const env = environmentOf(name);
      expect(Object.keys(env).filter((key) => !CONFIG_VARIABLES.includes(key))).toEqual([]);
      expect(REQUIRED_IN_PRODUCTION.filter((key) => !env[key])).toEqual([]);
      expect(env.NODE_ENV).toBe('production');
      // What src/config.ts makes of it: a production start it accepts, behind the proxy.
      const config = loadConfig(env);
      expect(config).toMatchObject({ production: true, port: 4000, host: '0.0.0.0', tls: undefined });
      expect(config.publicBaseUrl).toBe('https://tollgate.localhost');
      expect(config.metricsToken).toBe(OPERATOR.METRICS_TOKEN);
    }
    // Both instances and the release step share one configuration.
    expect(environmentOf('tollgate-2')).toEqual(environmentOf('tollgate-1'));
    expect(environmentOf('migrate')).toEqual(environmentOf('tollgate-1'));
  });

  it('refuses to start without each secret', () => {
    for (const secret of Object.keys(OPERATOR)) {
      const { [secret]: _left, ...rest } = OPERATOR as Record<string, string>;
      const everyService = () => Object.keys(services).map((name) => environmentOf(name, rest));
      expect(everyService).toThrow(`compose would refuse to start: set ${secret}`);
    }
  });

  it('points the instances at the PostgreSQL and Redis services and shares the credentials', () => {
    const env = environmentOf('tollgate-1');
    const database = new URL(env.DATABASE_URL!);
    const postgres = environmentOf('postgres');
    expect(database.hostname).toBe('postgres');
    expect(database.pathname).toBe(`/${postgres.POSTGRES_DB}`);
    expect(decodeURIComponent(database.username)).toBe(postgres.POSTGRES_USER);
    expect(decodeURIComponent(database.password)).toBe(postgres.POSTGRES_PASSWORD);
    expect(new URL(env.REDIS_URL!).hostname).toBe('redis');
  });

  it('trusts exactly the proxy, and publishes nothing but the proxy', () => {
    const proxyNetworks = services.proxy!.networks as Record<string, { ipv4_address?: string }>;
    expect(environmentOf('tollgate-1').TRUST_PROXY).toBe(proxyNetworks.backend!.ipv4_address);
    expect(services.proxy!.ports).toEqual(['80:80', '443:443']);
    for (const name of Object.keys(services).filter((n) => n !== 'proxy')) {
      expect({ name, ports: services[name]!.ports }).toEqual({ name, ports: undefined });
    }
  });

  it('runs the migrations once as a release step before the instances start', () => {
    expect(services.migrate!.command).toEqual(['node', 'dist/src/main.js', 'migrate']);
    expect(services.migrate!.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    for (const name of INSTANCES) {
      expect(services[name]!.depends_on).toEqual({
        migrate: { condition: 'service_completed_successfully' },
        redis: { condition: 'service_healthy' },
      });
      // The image's CMD (`serve`) runs the instances.
      expect(services[name]!.command).toBeUndefined();
    }
  });

  it('health-checks each instance on a probe path, on the port it listens on', () => {
    for (const name of INSTANCES) {
      const check = services[name]!.healthcheck!.test!.join(' ');
      const probe = /fetch\('http:\/\/127\.0\.0\.1:(\d+)(\/\w+)'\)/.exec(check);
      expect(probe?.[1]).toBe(environmentOf(name).PORT);
      expect(['/readyz', '/healthz']).toContain(probe?.[2]);
      expect(PLAIN_HTTP_PATHS.has(probe![2]!)).toBe(true);
    }
    expect(services.postgres!.healthcheck!.test).toContain('pg_isready');
    expect(services.redis!.healthcheck!.test).toEqual(['CMD', 'redis-cli', 'ping']);
  });

  it('has the proxy terminate TLS and balance over both instances, checking /readyz', () => {
    expect(services.proxy!.configs).toEqual([{ source: 'caddyfile', target: '/etc/caddy/Caddyfile' }]);
    const caddyfile = interpolate(compose.configs.caddyfile!.content, OPERATOR);
    expect(caddyfile).toContain('tls internal');
    const upstreams = /reverse_proxy ([^{\n]+)/.exec(caddyfile)?.[1]?.trim().split(/\s+/);
    const port = environmentOf('tollgate-1').PORT;
    expect(upstreams).toEqual(INSTANCES.map((name) => `${name}:${port}`));
    expect(caddyfile).toMatch(/health_uri \/readyz\n/);
    // Caddy reads its site address from its own environment.
    expect(caddyfile).toMatch(/^\{\$TOLLGATE_DOMAIN\} \{/);
    expect(environmentOf('proxy').TOLLGATE_DOMAIN).toBe(
      new URL(environmentOf('tollgate-1').PUBLIC_BASE_URL!).host,
    );
  });
});
