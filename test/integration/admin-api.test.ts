import pg from 'pg';
import {
  AppDocument,
  AppsDocument,
  CreateApiKeyDocument,
  CreateAppDocument,
  RevokeApiKeyDocument,
  UpdateAppSettingsDocument,
} from '../generated/graphql.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let db: pg.Client;

beforeAll(async () => {
  server = await startTestServer();
  db = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await db.connect();
});
afterAll(async () => {
  await db.end();
  await server.close();
});

describe('admin authentication', () => {
  it('rejects admin operations without a credential with 401', async () => {
    const res = await server.op(AppsDocument, {});
    expect(res.status).toBe(200);
    expect(res.body.data).toBeNull();
    expect(res.body.errors).toEqual([
      expect.objectContaining({
        message: 'Invalid or missing credentials',
        extensions: { code: 'UNAUTHENTICATED', statusCode: 401 },
      }),
    ]);
  });

  it('rejects admin operations with an API key with 403', async () => {
    const { apiKey } = await server.createApp();
    const res = await server.op(AppsDocument, {}, apiKey);
    expect(res.body.errors?.[0].extensions).toEqual({ code: 'FORBIDDEN', statusCode: 403 });
    expect(res.body.errors?.[0].message).toBe('This operation needs the admin token');
  });

  it('rejects a wrong admin token with 401', async () => {
    const res = await server.op(AppsDocument, {}, `${server.adminToken}x`);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ statusCode: 401, message: 'Invalid credentials', error: 'Unauthorized' });
  });

  it('lets the admin token create, list and read apps', async () => {
    const created = await server.op(CreateAppDocument, { input: { name: 'Listed app' } }, server.adminToken);
    const appId = created.body.data!.createApp.app.id;
    expect(created.body.data!.createApp.app).toEqual({
      id: expect.stringMatching(/^app_[a-z2-7]{32}$/),
      name: 'Listed app',
      settings: {
        autoCreateCustomer: true,
        magicLinkExpiryMinutes: 15,
        allowedCallbackUrls: '',
        customVerificationUrl: null,
        trialPaymentMethod: 'require_payment_method',
        organizationsEnabled: false,
        allowMultipleSubscriptions: false,
        sessionTtlSeconds: 2592000,
      },
    });
    const list = await server.op(AppsDocument, {}, server.adminToken);
    expect(list.body.data!.apps).toContainEqual({ id: appId, name: 'Listed app' });
    const one = await server.op(AppDocument, { id: appId }, server.adminToken);
    expect(one.body.data!.app).toMatchObject({ id: appId, name: 'Listed app' });
    expect(one.body.data!.app!.apiKeys).toHaveLength(1);
    const missing = await server.op(AppDocument, { id: 'app_missing' }, server.adminToken);
    expect(missing.body.data!.app).toBeNull();
  });
});

describe('API keys', () => {
  it('stores only a hash and a display prefix, never the key', async () => {
    const { appId, apiKey } = await server.createApp();
    expect(apiKey).toMatch(/^tg_sk_[A-Za-z0-9_-]{43}$/);
    const { rows } = await db.query('select * from api_key where app_id = $1', [appId]);
    expect(rows).toHaveLength(1);
    const serialized = JSON.stringify(rows);
    expect(serialized).not.toContain(apiKey);
    expect(serialized).not.toContain(apiKey.slice(12));
    expect(rows[0].prefix).toBe(apiKey.slice(0, 12));
    expect(rows[0].key_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('authenticates a key until it is revoked, then answers 401', async () => {
    const { appId } = await server.createApp();
    const created = await server.op(CreateApiKeyDocument, { appId }, server.adminToken);
    const { apiKey, key } = created.body.data!.createApiKey;
    expect(key.prefix).toBe(apiKey.slice(0, 12));
    expect(key.revokedAt).toBeNull();

    const before = await server.http.get('/v1/unknown-route').set('authorization', `Bearer ${apiKey}`);
    expect(before.status).toBe(404); // authenticated, then no such route

    const revoked = await server.op(RevokeApiKeyDocument, { id: key.id }, server.adminToken);
    expect(revoked.body.data!.revokeApiKey.revokedAt).toEqual(expect.any(String));

    const after = await server.http.get('/v1/unknown-route').set('authorization', `Bearer ${apiKey}`);
    expect(after.status).toBe(401);
    expect(after.body).toEqual({
      statusCode: 401,
      message: 'Invalid or revoked API key',
      error: 'Unauthorized',
    });
  });

  it('answers NOT_FOUND for an unknown key or app', async () => {
    const res = await server.op(RevokeApiKeyDocument, { id: 'key_nope' }, server.adminToken);
    expect(res.body.errors?.[0]).toMatchObject({
      message: 'API key key_nope not found',
      extensions: { code: 'NOT_FOUND', statusCode: 404 },
    });
    const res2 = await server.op(CreateApiKeyDocument, { appId: 'app_nope' }, server.adminToken);
    expect(res2.body.errors?.[0].extensions).toEqual({ code: 'NOT_FOUND', statusCode: 404 });
  });
});

describe('app settings', () => {
  it('updates only the settings sent', async () => {
    const { appId } = await server.createApp();
    const res = await server.op(
      UpdateAppSettingsDocument,
      {
        appId,
        input: {
          magicLinkExpiryMinutes: 30,
          allowedCallbackUrls: 'https://app.example.com/*\nhttps://*.example.org/callback',
          trialPaymentMethod: 'no_payment_method',
          allowMultipleSubscriptions: true,
        },
      },
      server.adminToken,
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.updateAppSettings.settings).toEqual({
      autoCreateCustomer: true,
      magicLinkExpiryMinutes: 30,
      allowedCallbackUrls: 'https://app.example.com/*\nhttps://*.example.org/callback',
      customVerificationUrl: null,
      trialPaymentMethod: 'no_payment_method',
      organizationsEnabled: false,
      allowMultipleSubscriptions: true,
      sessionTtlSeconds: 2592000,
    });
  });

  it.each([
    [{ magicLinkExpiryMinutes: 0 }, 'magicLinkExpiryMinutes: must be at least 1 minute'],
    [{ sessionTtlSeconds: -5 }, 'sessionTtlSeconds: must be at least 60 seconds'],
    [{ allowedCallbackUrls: 'not a url' }, 'allowedCallbackUrls: invalid pattern'],
    [{ allowedCallbackUrls: 'https://*.com/*' }, 'allowedCallbackUrls: invalid pattern "https://*.com/*"'],
    [
      { customVerificationUrl: 'ftp://example.com/verify' },
      'customVerificationUrl: must be an absolute http(s) URL',
    ],
    [{ autoCreateCustomer: null }, 'autoCreateCustomer:'],
  ])('refuses %j with a message naming the field', async (input, message) => {
    const { appId } = await server.createApp();
    const res = await server.op(UpdateAppSettingsDocument, { appId, input: input as any }, server.adminToken);
    expect(res.body.data).toBeNull();
    expect(res.body.errors?.[0].extensions).toEqual({
      code: 'BAD_USER_INPUT',
      statusCode: 400,
      fields: Object.keys(input),
    });
    expect(res.body.errors?.[0].message).toContain(message);
  });

  it('refuses an invalid setting at creation too', async () => {
    const res = await server.op(
      CreateAppDocument,
      { input: { name: ' ', magicLinkExpiryMinutes: -1 } },
      server.adminToken,
    );
    expect(res.body.errors?.[0].message).toBe(
      'magicLinkExpiryMinutes: must be at least 1 minute; name: must not be empty',
    );
  });
});
