import type { MikroORM } from '@mikro-orm/postgresql';
import { exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';
import type { Clock } from '../../core/clock.js';
import { NotFoundError, UnauthorizedError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { type Principal, requireAdmin, requireAppPrincipal } from '../../core/principal.js';
import { idSchema, parseInput } from '../../core/validation.js';
import type { AppsService } from '../apps/apps.service.js';
import type { EntitlementsService } from '../entitlements/entitlements.service.js';
import { billingContextOf } from '../subscriptions/billing-context.js';
import type { SecretBox } from '../webhooks/secret-box.js';

export const ENTITLEMENT_TOKEN_ALG = 'ES256';

/**
 * How long a rotated-in key is published before it signs: at least the age `jose`'s remote key set
 * keeps a fetched JWKS (10 minutes), so every verifier has seen the key before a token names it.
 */
export const ROTATION_GRACE_MS = 10 * 60 * 1000;

/** The longest token lifetime (the setting's maximum) plus the verifiers' clock tolerance. */
export const RETIRE_AFTER_MS = (3600 + 60) * 1000;

export interface IssuedEntitlementToken {
  readonly token: string;
  readonly expiresAt: Date;
  /** The entitlement version the token carries. */
  readonly ev: number;
}

export interface PublicJwks {
  readonly keys: readonly JWK[];
}

/** A signing key as the admin API shows it (never its private half). */
export interface SigningKeyView {
  readonly kid: string;
  readonly createdAt: Date;
  readonly signsFrom: Date;
  readonly retireAt: Date | null;
  readonly revokedAt: Date | null;
}

interface KeyRow {
  readonly id: string;
  readonly algorithm: string;
  readonly public_jwk: JWK;
  readonly private_key_sealed: string;
  readonly created_at: Date;
  readonly signs_from: Date;
  readonly retire_at: Date | null;
  readonly revoked_at: Date | null;
}

function keyView(row: KeyRow): SigningKeyView {
  return {
    kid: row.id,
    createdAt: new Date(row.created_at),
    signsFrom: new Date(row.signs_from),
    retireAt: row.retire_at && new Date(row.retire_at),
    revokedAt: row.revoked_at && new Date(row.revoked_at),
  };
}

/**
 * How long an instance reuses an app's key rows and token lifetime (for issuing and for its JWKS): a
 * revocation, rotation or lifetime change made on another instance applies there within this time (at
 * once on the instance that made it). Which key signs is still decided at each issuance, from the rows'
 * times.
 */
const SIGNING_KEYS_TTL_MS = 1000;

/**
 * How long a signed token is handed out again to a request that would get exactly the same claims
 * from the same key: a tenth of the token lifetime, at most 30 s. The repeat gets the first token, with
 * its own `iat` and `exp`, so it holds at least nine tenths of a fresh token's lifetime and the offline
 * worst case (a change visible at most one lifetime later) is unchanged; any change of plan, features,
 * `ev`, organization, role, key or lifetime makes the claims differ and a new token is signed.
 */
export function reuseWindowMs(ttlSeconds: number): number {
  return Math.min(ttlSeconds * 100, 30_000);
}

/** How many signed tokens an instance keeps for reuse (the oldest goes first). */
const REUSABLE_TOKENS = 5000;

/** The app's keys that are published at `now`: not revoked and not yet retired. */
const LIVE_KEYS = `
  select id, algorithm, public_jwk, private_key_sealed, created_at, signs_from, retire_at, revoked_at
    from entitlement_signing_key
   where app_id = ? and revoked_at is null and (retire_at is null or retire_at > ?)
   order by signs_from asc, id asc`;

/**
 * Entitlement tokens: short-lived JWTs (ES256) carrying a context's plan, features and entitlement
 * version, signed with a per-app key whose public half is published as a JWKS, so an app checks
 * features offline. Private keys are kept sealed by the SecretBox webhook secrets use.
 */
export class EntitlementTokensService {
  /** Imported private keys by kid (a key row never changes its key material). */
  readonly #privateKeys = new Map<string, Promise<CryptoKey>>();
  /** Per app: its live key rows and token lifetime as last read (see SIGNING_KEYS_TTL_MS). */
  readonly #signing = new Map<string, { until: number; rows: KeyRow[]; ttlSeconds: number }>();
  /** Moves whenever key rows change here, so a read begun before a change is not kept after it. */
  #keysChanged = 0;
  /** Tokens signed lately, by key, lifetime and claims (see reuseWindowMs). */
  readonly #signed = new Map<string, { token: string; iat: number; exp: number; reuseUntil: number }>();

  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
    private readonly secrets: SecretBox,
    private readonly apps: AppsService,
    private readonly entitlements: EntitlementsService,
    private readonly publicBaseUrl: string,
  ) {}

  /**
   * `POST /v1/apps/:appId/auth/entitlement-token`: a session token of the app for its own context, or an
   * API key of the app with `{customerId}` or `{organizationId}`. Another app's credential → 404 (API
   * key) or 401 (session); an unknown app → 404.
   */
  async issue(principal: Principal, appId: string, body: unknown): Promise<IssuedEntitlementToken> {
    const caller = requireAppPrincipal(principal);
    if (caller.appId !== appId) {
      // As the other `/auth` paths answer: a session of another (existing) app is not signed in here.
      if (caller.kind === 'session') await this.apps.appOrFail(appId);
      throw caller.kind === 'session'
        ? new UnauthorizedError('The session token does not belong to this app')
        : new NotFoundError('App', appId);
    }
    const context = await billingContextOf(this.orm, caller, body ?? {});
    const state = await this.entitlements.resolveState(context);
    const { entitlements } = state;
    const { key, ttlSeconds } = await this.#signingKey(appId);
    const now = this.clock.now();
    const iat = Math.floor(now.getTime() / 1000);
    const exp = iat + ttlSeconds;
    const ev = state.version;
    const claims: Record<string, unknown> = {
      plan: entitlements.planName === null ? null : { id: state.planId, name: entitlements.planName },
      ent: { ...entitlements.features },
      ev,
    };
    if (context.organizationId !== undefined) {
      claims.org = context.organizationId;
      if (caller.kind === 'session' && caller.orgRole !== undefined) claims.org_role = caller.orgRole;
    }
    const subject =
      caller.kind === 'session' ? caller.customerId : (context.customerId ?? context.organizationId);
    // Signing is most of an issuance's cost; a repeat with the same claims (a page render, another tab)
    // within the reuse window gets the token already signed.
    const reuseKey = `${key.id}\n${ttlSeconds}\n${subject}\n${JSON.stringify(claims)}`;
    const signed = this.#signed.get(reuseKey);
    const at = now.getTime();
    if (signed && at < signed.reuseUntil && at >= signed.iat * 1000) {
      return { token: signed.token, expiresAt: new Date(signed.exp * 1000), ev };
    }
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: key.algorithm, kid: key.id, typ: 'JWT' })
      .setIssuer(`${this.publicBaseUrl}/v1/apps/${appId}`)
      .setAudience(appId)
      .setSubject(subject!)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(await this.#privateKey(key));
    this.#signed.delete(reuseKey);
    if (this.#signed.size >= REUSABLE_TOKENS) this.#signed.delete(this.#signed.keys().next().value!);
    this.#signed.set(reuseKey, { token, iat, exp, reuseUntil: at + reuseWindowMs(ttlSeconds) });
    return { token, expiresAt: new Date(exp * 1000), ev };
  }

  /** `GET /v1/apps/:appId/.well-known/jwks.json`: the public keys published now (current and next). */
  async jwks(appId: string): Promise<PublicJwks> {
    const { rows } = await this.#appKeys(appId);
    const at = this.clock.now().getTime();
    return {
      keys: rows
        .filter((r) => r.retire_at === null || new Date(r.retire_at).getTime() > at)
        .map((row) => row.public_jwk),
    };
  }

  /** The app's published keys (admin). */
  async listSigningKeys(principal: Principal, appId: string): Promise<SigningKeyView[]> {
    requireAdmin(principal);
    const app = await this.apps.appOrFail(appId);
    return (await this.#liveKeys(app.id)).map(keyView);
  }

  /**
   * Publishes a new key at once; it signs only after ROTATION_GRACE_MS, and the keys signing before it
   * leave the JWKS RETIRE_AFTER_MS after that, when no token they signed can still be valid.
   */
  async rotate(principal: Principal, appId: string): Promise<SigningKeyView> {
    requireAdmin(principal);
    const id = parseInput(idSchema, appId);
    const created = await this.orm.em.transactional(async (em) => {
      const tx = em.getTransactionContext();
      const connection = em.getConnection();
      const [app] = await connection.execute('select id from app where id = ? for update', [id], 'all', tx);
      if (!app) throw new NotFoundError('App', id);
      const now = this.clock.now();
      const live = await connection.execute<KeyRow[]>(LIVE_KEYS, [id, now], 'all', tx);
      const signsFrom = new Date(
        Math.max(now.getTime(), ...live.map((k) => new Date(k.signs_from).getTime())) + ROTATION_GRACE_MS,
      );
      const retireAt = new Date(signsFrom.getTime() + RETIRE_AFTER_MS);
      await connection.execute(
        `update entitlement_signing_key set retire_at = ?
          where app_id = ? and revoked_at is null and (retire_at is null or retire_at > ?)`,
        [retireAt, id, retireAt],
        'all',
        tx,
      );
      return keyView(await this.#createKey(id, signsFrom, tx));
    });
    // Once committed: a read of the rows before that would miss the new key.
    this.#forgetKeys(id);
    return created;
  }

  /** Removes a key from the JWKS at once and stops signing with it (an emergency: a leaked key). */
  async revoke(principal: Principal, appId: string, kid: string): Promise<SigningKeyView> {
    requireAdmin(principal);
    const id = parseInput(idSchema, appId);
    const rows = await this.orm.em.getConnection().execute<KeyRow[]>(
      `update entitlement_signing_key set revoked_at = coalesce(revoked_at, ?)
        where app_id = ? and id = ?
        returning id, algorithm, public_jwk, private_key_sealed, created_at, signs_from, retire_at, revoked_at`,
      [this.clock.now(), id, String(kid)],
    );
    if (!rows[0]) throw new NotFoundError('Signing key', String(kid));
    this.#privateKeys.delete(rows[0].id);
    this.#forgetKeys(id);
    return keyView(rows[0]);
  }

  /**
   * Drops the app's cached key rows, and keeps a read in flight from storing what it read before the
   * change (it would publish, or sign with, a revoked key for another SIGNING_KEYS_TTL_MS).
   */
  #forgetKeys(appId: string): void {
    this.#keysChanged++;
    this.#signing.delete(appId);
  }

  async #liveKeys(appId: string): Promise<KeyRow[]> {
    return this.orm.em.getConnection().execute<KeyRow[]>(LIVE_KEYS, [appId, this.clock.now()]);
  }

  /**
   * The key that signs now (the live key with the latest `signsFrom` not in the future) and the app's
   * token lifetime, in one round trip. An app's first key is made on its first token; after a
   * revocation the next published key signs at once (or a new one is made).
   */
  async #signingKey(appId: string): Promise<{ key: KeyRow; ttlSeconds: number }> {
    const { rows, ttlSeconds } = await this.#appKeys(appId);
    const at = this.clock.now().getTime();
    const live = rows.filter((r) => r.retire_at === null || new Date(r.retire_at).getTime() > at);
    const current = live.filter((r) => new Date(r.signs_from).getTime() <= at).at(-1) ?? live[0];
    if (current) return { key: current, ttlSeconds };
    const first = await this.#firstKey(appId);
    this.#forgetKeys(appId);
    return { key: first, ttlSeconds };
  }

  /** The app's live key rows and token lifetime, read at most once per SIGNING_KEYS_TTL_MS; 404 without the app. */
  async #appKeys(appId: string): Promise<{ rows: KeyRow[]; ttlSeconds: number }> {
    const cached = this.#signing.get(appId);
    if (cached && cached.until > Date.now()) return cached;
    const changes = this.#keysChanged;
    const rows = await this.orm.em.getConnection().execute<(KeyRow & { ttl: number })[]>(
      `select a.entitlement_token_ttl_seconds as ttl, k.*
         from app a
         left join lateral (${LIVE_KEYS.replace('app_id = ?', 'app_id = a.id')}) k on true
        where a.id = ?`,
      [this.clock.now(), parseInput(idSchema, appId)],
    );
    if (!rows[0]) throw new NotFoundError('App', appId);
    const read = {
      until: Date.now() + SIGNING_KEYS_TTL_MS,
      rows: rows.filter((r) => r.id !== null),
      ttlSeconds: rows[0].ttl,
    };
    if (changes !== this.#keysChanged) return read;
    if (this.#signing.size >= 10_000) this.#signing.clear();
    this.#signing.set(appId, read);
    return read;
  }

  /** Makes the app's first live key, serialized on the app row so concurrent first tokens share one. */
  async #firstKey(appId: string): Promise<KeyRow> {
    return this.orm.em.transactional(async (em) => {
      const tx = em.getTransactionContext();
      const connection = em.getConnection();
      await connection.execute('select id from app where id = ? for update', [appId], 'all', tx);
      const now = this.clock.now();
      const [live] = await connection.execute<KeyRow[]>(LIVE_KEYS, [appId, now], 'all', tx);
      return live ?? this.#createKey(appId, now, tx);
    });
  }

  async #createKey(appId: string, signsFrom: Date, tx: unknown): Promise<KeyRow> {
    const { publicKey, privateKey } = await generateKeyPair(ENTITLEMENT_TOKEN_ALG, { extractable: true });
    const kid = newId('etk');
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: ENTITLEMENT_TOKEN_ALG, use: 'sig' };
    const sealed = this.secrets.seal(JSON.stringify(await exportJWK(privateKey)));
    const [row] = await this.orm.em.getConnection().execute<KeyRow[]>(
      `insert into entitlement_signing_key (id, app_id, algorithm, public_jwk, private_key_sealed, created_at, signs_from)
       values (?, ?, ?, ?, ?, ?, ?)
       returning id, algorithm, public_jwk, private_key_sealed, created_at, signs_from, retire_at, revoked_at`,
      [kid, appId, ENTITLEMENT_TOKEN_ALG, JSON.stringify(publicJwk), sealed, this.clock.now(), signsFrom],
      'all',
      tx as never,
    );
    this.#privateKeys.set(kid, Promise.resolve(privateKey));
    return row!;
  }

  #privateKey(row: KeyRow): Promise<CryptoKey> {
    let key = this.#privateKeys.get(row.id);
    if (!key) {
      key = importJWK(JSON.parse(this.secrets.open(row.private_key_sealed)) as JWK, row.algorithm).then(
        (k) => k as CryptoKey,
      );
      key.catch(() => this.#privateKeys.delete(row.id));
      this.#privateKeys.set(row.id, key);
    }
    return key;
  }
}
