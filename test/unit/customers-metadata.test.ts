import fc from 'fast-check';
import { ValidationError } from '../../src/core/errors.js';
import {
  assertMetadataLimits,
  METADATA_MAX_BYTES,
  METADATA_MAX_KEYS,
  mergeMetadata,
} from '../../src/modules/customers/customers.schemas.js';

const key = fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), fc.constantFrom('__proto__', 'constructor'));
const value = fc.jsonValue({ maxDepth: 2 }).filter((v) => v !== null);
const stored = fc.dictionary(key, value, { maxKeys: 12 });
const patch = fc.dictionary(key, fc.option(value, { nil: null }), { maxKeys: 12 });

const own = (o: object, k: string) => Object.hasOwn(o, k);

describe('mergeMetadata (the interface merge rule)', () => {
  it('sets every key sent with a value to that value', () => {
    fc.assert(
      fc.property(stored, patch, (current, sent) => {
        const merged = mergeMetadata(current, sent);
        for (const [k, v] of Object.entries(sent)) if (v !== null) expect(merged[k]).toEqual(v);
      }),
    );
  });

  it('removes every key sent as null', () => {
    fc.assert(
      fc.property(stored, patch, (current, sent) => {
        const merged = mergeMetadata(current, sent);
        for (const [k, v] of Object.entries(sent)) if (v === null) expect(own(merged, k)).toBe(false);
      }),
    );
  });

  it('keeps every key that was not sent, with its value, and adds nothing else', () => {
    fc.assert(
      fc.property(stored, patch, (current, sent) => {
        const merged = mergeMetadata(current, sent);
        for (const [k, v] of Object.entries(current)) if (!own(sent, k)) expect(merged[k]).toEqual(v);
        for (const k of Object.keys(merged)) expect(own(current, k) || own(sent, k)).toBe(true);
      }),
    );
  });

  it('is idempotent and never mutates its inputs', () => {
    fc.assert(
      fc.property(stored, patch, (current, sent) => {
        const before = structuredClone([current, sent]);
        const once = mergeMetadata(current, sent);
        expect(mergeMetadata(once, sent)).toEqual(once);
        expect([current, sent]).toEqual(before);
      }),
    );
  });

  it('treats __proto__ as an ordinary key and never touches a prototype', () => {
    const sent = JSON.parse('{"__proto__": {"polluted": true}}');
    const merged = mergeMetadata({}, sent);
    expect(Object.keys(merged)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('assertMetadataLimits', () => {
  it(`accepts ${METADATA_MAX_KEYS} keys and refuses one more`, () => {
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
    expect(() => assertMetadataLimits(keys(METADATA_MAX_KEYS))).not.toThrow();
    expect(() => assertMetadataLimits(keys(METADATA_MAX_KEYS + 1))).toThrow(ValidationError);
  });

  it('measures the size in UTF-8 bytes of compact JSON', () => {
    // {"s":"…"} is 8 bytes around the string; "é" is 2 bytes in UTF-8.
    const exactly = { s: 'é'.repeat((METADATA_MAX_BYTES - 8) / 2) };
    expect(Buffer.byteLength(JSON.stringify(exactly))).toBe(METADATA_MAX_BYTES);
    expect(() => assertMetadataLimits(exactly)).not.toThrow();
    expect(() => assertMetadataLimits({ s: `${exactly.s}x` })).toThrow(
      `metadata: must be at most ${METADATA_MAX_BYTES} bytes as JSON (would be ${METADATA_MAX_BYTES + 1})`,
    );
  });
});
