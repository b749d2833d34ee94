import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const API_KEY_PREFIX = 'tg_sk_';
export const SESSION_TOKEN_PREFIX = 'tg_st_';

/** A random secret of `bytes` bytes (default 32 = 256 bits), base64url, behind an optional prefix. */
export function randomSecret(prefix = '', bytes = 32): string {
  return prefix + randomBytes(bytes).toString('base64url');
}

/** Secrets are stored only as SHA-256 digests: they are high-entropy, so a slow hash adds nothing. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Constant-time equality for secrets of any length (both sides are hashed to a fixed width first). */
export function secretsEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a, 'utf8').digest();
  const db = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(da, db);
}

/** Short, public part of a secret used to recognise it in lists (never enough to use it). */
export function displayPrefix(secret: string): string {
  return secret.slice(0, 12);
}
