import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { loadConfig } from '../../src/config.js';
import type { Clock } from '../../src/core/clock.js';
import { createLogger } from '../../src/core/logger.js';
import { type RunningServer, startServer } from '../../src/server.js';

export interface TestServer extends RunningServer {
  /** supertest bound to this server. */
  readonly http: ReturnType<typeof request>;
  /** Runs a GraphQL operation with a bearer credential (or none). */
  graphql<T = any>(
    query: string,
    variables?: Record<string, unknown>,
    token?: string,
  ): Promise<{ status: number; body: { data?: T; errors?: any[] } }>;
  /** Creates an app through the admin GraphQL API; returns its id and first API key. */
  createApp(settings?: Record<string, unknown>): Promise<{ appId: string; apiKey: string }>;
}

export interface TestServerOptions {
  /** Extra environment (e.g. SMTP_URL); the database, port and admin token are set for you. */
  readonly env?: Record<string, string>;
  readonly clock?: Clock;
}

/** Starts a real Tollgate on a random loopback port against the run's test database. */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const adminToken = `tg_admin_test_${randomBytes(16).toString('hex')}`;
  const config = loadConfig({
    DATABASE_URL: process.env.TEST_DATABASE_URL,
    PORT: '0',
    HOST: '127.0.0.1',
    ADMIN_TOKEN: adminToken,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...options.env,
  });
  const server = await startServer(config, {
    clock: options.clock,
    logger: createLogger(config.logLevel),
    seedDemo: false,
  });
  const http = request(server.url);
  const graphql: TestServer['graphql'] = async (query, variables, token) => {
    const req = http.post('/graphql').set('content-type', 'application/json');
    if (token) req.set('authorization', `Bearer ${token}`);
    const res = await req.send({ query, variables });
    return { status: res.status, body: res.body };
  };
  const createApp: TestServer['createApp'] = async (settings = {}) => {
    const res = await graphql(
      `mutation($input: CreateAppInput!) { createApp(input: $input) { apiKey app { id } } }`,
      { input: { name: `test-${randomBytes(4).toString('hex')}`, ...settings } },
      adminToken,
    );
    if (res.body.errors) throw new Error(`createApp failed: ${JSON.stringify(res.body.errors)}`);
    return { appId: res.body.data.createApp.app.id, apiKey: res.body.data.createApp.apiKey };
  };
  return Object.assign(Object.create(null), server, { http, graphql, createApp, close: server.close });
}
