import { randomFillSync } from 'node:crypto';

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

const ID_BYTES = 20;

/**
 * Random bytes drawn from the CSPRNG ahead, a batch at a time (as Node's own randomUUID does): one call
 * per id cost about 6 µs, a twentieth of a metered consumption's CPU, which draws three ids
 * (`bench/metering.js`). Each byte is handed out once.
 */
const pool = Buffer.alloc(ID_BYTES * 256);
let drawn = pool.length;

function randomSlice(): Buffer {
  if (drawn === pool.length) {
    randomFillSync(pool);
    drawn = 0;
  }
  drawn += ID_BYTES;
  return pool.subarray(drawn - ID_BYTES, drawn);
}

export function newId(prefix: IdPrefix): string {
  const bytes = randomSlice();
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
