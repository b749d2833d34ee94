import type { MikroORM } from '@mikro-orm/postgresql';
import { NotFoundError, ValidationError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { type Principal, requireAdmin, requireApiKey } from '../../core/principal.js';
import { API_KEY_PREFIX, displayPrefix, hashSecret, randomSecret } from '../../core/tokens.js';
import { idSchema, parseInput } from '../../core/validation.js';
import { ApiKey } from './api-key.entity.js';
import { App } from './app.entity.js';
import { actingOnApp } from './app-rules.js';
import {
  appSettingsSchema,
  callbackUrlCandidateSchema,
  createApiKeySchema,
  createAppSchema,
} from './apps.schemas.js';
import {
  type CallbackPattern,
  type CallbackUrlCheck,
  checkCallbackUrl,
  isAllowedOrigin,
  parseStoredCallbackPatterns,
} from './callback-url.js';

/**
 * How long the union of every app's patterns serves requests that name no app (preflights): a pattern
 * added to an app grants its preflights within this time.
 */
const ANY_APP_ORIGINS_TTL_MS = 5_000;

export interface CreatedApiKey {
  /** The secret, shown exactly once. */
  readonly secret: string;
  readonly key: ApiKey;
}

/** Apps and their API keys: operator (admin token) use cases. */
export class AppsService {
  constructor(private readonly orm: MikroORM) {}

  private get em() {
    return this.orm.em;
  }

  /** Creates an app with the given settings and its first API key. */
  async createApp(principal: Principal, input: unknown): Promise<{ app: App; apiKey: CreatedApiKey }> {
    requireAdmin(principal);
    const { name, ...settings } = parseInput(createAppSchema, input);
    const app = this.em.create(App, { id: newId('app'), name });
    this.em.assign(app, settings);
    const apiKey = this.buildApiKey(app);
    await this.em.flush();
    return { app, apiKey };
  }

  /** Changes some settings of an app; unsent settings keep their value. */
  async updateAppSettings(principal: Principal, appId: string, input: unknown): Promise<App> {
    requireAdmin(principal);
    const settings = parseInput(appSettingsSchema, input);
    const app = await this.appOrFail(appId);
    this.em.assign(app, settings);
    await this.em.flush();
    return app;
  }

  async listApps(principal: Principal): Promise<App[]> {
    requireAdmin(principal);
    return this.em.find(App, {}, { orderBy: { createdAt: 'desc', id: 'asc' } });
  }

  /**
   * An app, or null when there is none with that id. The operator names any app; an API key may leave
   * the id out or name its own app (another app's is answered as absent, null).
   */
  async getApp(principal: Principal, appId: string | null | undefined): Promise<App | null> {
    if (principal.kind === 'apiKey') {
      if (appId !== undefined && appId !== null && appId !== principal.appId) return null;
      return this.em.findOne(App, { id: principal.appId });
    }
    requireAdmin(principal);
    if (appId === undefined || appId === null)
      throw ValidationError.forField('id', 'is required for the admin token');
    return this.em.findOne(App, { id: parseInput(idSchema, appId) });
  }

  async listApiKeys(principal: Principal, appId: string): Promise<ApiKey[]> {
    requireAdmin(principal);
    return this.em.find(ApiKey, { app: appId }, { orderBy: { createdAt: 'desc', id: 'asc' } });
  }

  async createApiKey(principal: Principal, appId: string, input: unknown = {}): Promise<CreatedApiKey> {
    requireAdmin(principal);
    const { name } = parseInput(createApiKeySchema, input);
    const app = await this.appOrFail(appId);
    const created = this.buildApiKey(app, name);
    await this.em.flush();
    return created;
  }

  /** Revokes a key at once; revoking twice keeps the first revocation time. */
  async revokeApiKey(principal: Principal, keyId: string): Promise<ApiKey> {
    requireAdmin(principal);
    const key = await this.em.findOne(ApiKey, { id: parseInput(idSchema, keyId) });
    if (!key) throw new NotFoundError('API key', keyId);
    key.revokedAt ??= new Date();
    await this.em.flush();
    return key;
  }

  /**
   * Whether the app's login and checkout flows would accept `url` as a callback, and by which of its
   * patterns (the same matcher). The operator names any app; an API key its own.
   */
  async checkCallbackUrl(principal: Principal, appId: string, url: unknown): Promise<CallbackUrlCheck> {
    const { appId: id } = requireApiKey(await actingOnApp(this.em, principal, { appId }));
    const app = await this.appOrFail(id);
    const candidate = parseInput(callbackUrlCandidateSchema, url);
    return checkCallbackUrl(candidate, parseStoredCallbackPatterns(app.allowedCallbackUrls));
  }

  /**
   * The app named by `appId`, else 404. No authorization: for the operator's use cases above, and for
   * the public login endpoints, where the app id in the path is what names the app.
   */
  async appOrFail(appId: string): Promise<App> {
    const app = await this.em.findOne(App, { id: parseInput(idSchema, appId) });
    if (!app) throw new NotFoundError('App', appId);
    return app;
  }

  private buildApiKey(app: App, name: string | null = null): CreatedApiKey {
    const secret = randomSecret(API_KEY_PREFIX);
    const key = this.em.create(ApiKey, {
      id: newId('key'),
      app,
      keyHash: hashSecret(secret),
      prefix: displayPrefix(secret),
      name,
    });
    return { secret, key };
  }

  /**
   * Whether a browser page at `origin` may call Tollgate for app `appId`: the origin of one of the app's
   * allowed callback URL patterns, read at each request so a settings change applies at once (one
   * primary-key read, only for cross-origin requests).
   *
   * Without an app (a preflight, or a request without a credential, on a path that names none) any
   * app's patterns grant it. Those requests are answered before any budget is spent, so every app's
   * patterns are read at most once per ANY_APP_ORIGINS_TTL_MS rather than per request; a request with a
   * credential is always checked against its own app's current patterns.
   */
  async allowsOrigin(origin: string, appId: string | undefined): Promise<boolean> {
    if (appId === undefined) return (await this.#anyAppPatterns()).some((p) => isAllowedOrigin(origin, p));
    const rows = await this.em
      .getConnection()
      .execute<{ allowed_callback_urls: string }[]>('select allowed_callback_urls from app where id = ?', [
        appId,
      ]);
    return rows.some((row) =>
      isAllowedOrigin(origin, parseStoredCallbackPatterns(row.allowed_callback_urls)),
    );
  }

  #anyApp: { readonly until: number; readonly patterns: Promise<CallbackPattern[][]> } | undefined;

  #anyAppPatterns(): Promise<CallbackPattern[][]> {
    const now = Date.now();
    if (this.#anyApp && this.#anyApp.until > now) return this.#anyApp.patterns;
    const patterns = this.em
      .getConnection()
      .execute<{ allowed_callback_urls: string }[]>(
        "select allowed_callback_urls from app where allowed_callback_urls <> ''",
      )
      .then((rows) => rows.map((row) => parseStoredCallbackPatterns(row.allowed_callback_urls)));
    this.#anyApp = { until: now + ANY_APP_ORIGINS_TTL_MS, patterns };
    // A failed read is not kept: the next request tries again.
    patterns.catch(() => {
      if (this.#anyApp?.patterns === patterns) this.#anyApp = undefined;
    });
    return patterns;
  }
}
