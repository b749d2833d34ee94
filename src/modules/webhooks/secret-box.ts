import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 'v1';

/**
 * Encrypts endpoint signing secrets at rest with AES-256-GCM (a fresh 12-byte IV per secret, the
 * 16-byte tag checked on every read): a copy of the database alone does not let anyone sign events.
 */
export class SecretBox {
  readonly #key: Buffer;

  /** `key`: 32 bytes in base64 (WEBHOOK_SECRET_KEY). */
  constructor(key: string) {
    this.#key = Buffer.from(key, 'base64');
    if (this.#key.length !== 32) throw new Error('the secret key must be 32 bytes');
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  open(sealed: string): string {
    const [version, encoded] = sealed.split(':', 2);
    if (version !== VERSION || !encoded) throw new Error('unknown secret format');
    const raw = Buffer.from(encoded, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  }
}
