import { randomBytes } from 'node:crypto';

/**
 * Resource ids: a type prefix and 20 random bytes in lowercase base32 (e.g. `cus_…`).
 * Random rather than sequential, so ids reveal neither volume nor order and cannot be guessed.
 */
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

export type IdPrefix =
  | 'app'
  | 'key'
  | 'cus'
  | 'ses'
  | 'mlt'
  | 'pln'
  | 'sub'
  | 'mrr'
  | 'org'
  | 'mem'
  | 'we'
  | 'msg'
  | 'whd'
  | 'wha'
  | 'bkt'
  | 'grant'
  | 'use'
  | 'etk'
  | 'inv'
  | 'op'
  | 'ops'
  | 'opt'
  | 'aud';

export function newId(prefix: IdPrefix): string {
  const bytes = randomBytes(20);
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return `${prefix}_${out}`;
}
