import { generateKeyPairSync, sign, verify } from 'node:crypto';
import fc from 'fast-check';
import { decodeProtectedHeader, exportJWK, importJWK, jwtVerify } from 'jose';
import {
  ecdsaDerToJose,
  signCompactJws,
  type TokenAlgorithm,
  tokenSigner,
} from '../../src/modules/entitlement-tokens/compact-jws.js';

/** A DER INTEGER of a non-negative value: minimal bytes, a zero byte first when the high bit is set. */
function derInteger(value: Uint8Array): Buffer {
  let start = 0;
  while (start < value.length - 1 && value[start] === 0) start++;
  let body = Buffer.from(value.subarray(start));
  if (body[0]! & 0x80) body = Buffer.concat([Buffer.of(0), body]);
  return Buffer.concat([Buffer.of(0x02, body.length), body]);
}

function derSignature(r: Uint8Array, s: Uint8Array): Buffer {
  const body = Buffer.concat([derInteger(r), derInteger(s)]);
  const length = body.length < 0x80 ? Buffer.of(body.length) : Buffer.of(0x81, body.length);
  return Buffer.concat([Buffer.of(0x30), length, body]);
}

async function keyPair(alg: TokenAlgorithm) {
  const { privateKey, publicKey } =
    alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('ed25519');
  return { privateJwk: await exportJWK(privateKey), publicJwk: await exportJWK(publicKey) };
}

describe('ecdsaDerToJose (DER ECDSA signature → JWS R || S)', () => {
  it('left-pads R and S to the curve size, whatever their DER length (short values, sign bytes)', () => {
    const half = fc.uint8Array({ minLength: 32, maxLength: 32 });
    // Small values too (leading zero bytes), whose DER integers are shorter than 32 bytes.
    const small = fc
      .tuple(fc.integer({ min: 1, max: 32 }), half)
      .map(([zeros, bytes]) => Uint8Array.from(bytes, (b, i) => (i < zeros ? 0 : b)));
    fc.assert(
      fc.property(fc.oneof(half, small), fc.oneof(half, small), (r, s) => {
        expect(ecdsaDerToJose(derSignature(r, s), 32)).toEqual(Buffer.concat([r, s]));
      }),
      { numRuns: 2000 },
    );
  });

  it('reads a P-521 signature, whose DER sequence has a long-form length', () => {
    const r = Buffer.alloc(66, 0x01);
    const s = Buffer.alloc(66, 0xff);
    s[0] = 0x01;
    const der = derSignature(r, s);
    expect(der[1]).toBe(0x81);
    expect(ecdsaDerToJose(der, 66)).toEqual(Buffer.concat([r, s]));
  });

  it('matches what OpenSSL writes as IEEE P1363 for the same signatures', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    for (let i = 0; i < 300; i++) {
      const data = Buffer.from(`message ${i}`);
      const raw = ecdsaDerToJose(sign('sha256', data, privateKey), 32);
      expect(raw).toHaveLength(64);
      expect(verify('sha256', data, { key: publicKey, dsaEncoding: 'ieee-p1363' }, raw)).toBe(true);
    }
  });

  it('refuses what is not a DER signature of the size asked', () => {
    const good = derSignature(Buffer.alloc(32, 0x11), Buffer.alloc(32, 0x22));
    const bad = [
      Buffer.of(0x31, ...good.subarray(1)), // not a SEQUENCE
      good.subarray(0, good.length - 1), // truncated
      Buffer.concat([good, Buffer.of(0)]), // trailing byte
      derSignature(Buffer.alloc(33, 0x11), Buffer.alloc(32, 0x22)), // R longer than the curve
      Buffer.of(0x30, 6, 0x02, 0, 0x02, 0, 0, 0), // empty integers
    ];
    for (const der of bad) expect(() => ecdsaDerToJose(der, 32)).toThrow('Malformed ECDSA signature');
  });
});

describe('signCompactJws', () => {
  it.each<TokenAlgorithm>(['ES256', 'EdDSA'])(
    'signs a JWT that jose verifies (%s), header kid and typ',
    async (alg) => {
      const { privateJwk, publicJwk } = await keyPair(alg);
      const signer = tokenSigner('etk_test', alg, privateJwk);
      const claims = {
        iss: 'https://t.example/v1/apps/app_1',
        aud: 'app_1',
        sub: 'cus_1',
        ent: { sso: true },
        ev: 7,
      };
      for (let i = 0; i < 50; i++) {
        const token = await signCompactJws(signer, {
          ...claims,
          iat: 1_800_000_000 + i,
          exp: 1_800_000_300 + i,
        });
        expect(decodeProtectedHeader(token)).toEqual({ alg, kid: 'etk_test', typ: 'JWT' });
        const { payload } = await jwtVerify(token, await importJWK(publicJwk, alg), {
          algorithms: [alg],
          audience: 'app_1',
          currentDate: new Date((1_800_000_100 + i) * 1000),
        });
        expect(payload).toEqual({ ...claims, iat: 1_800_000_000 + i, exp: 1_800_000_300 + i });
      }
    },
  );

  it('refuses a key of another kind than its algorithm', async () => {
    const ed25519 = (await keyPair('EdDSA')).privateJwk;
    const p384 = await exportJWK(generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey);
    expect(() => tokenSigner('etk_test', 'ES256', ed25519)).toThrow('ES256 signs with a P-256 key');
    expect(() => tokenSigner('etk_test', 'ES256', p384)).toThrow('ES256 signs with a P-256 key');
    const p256 = (await keyPair('ES256')).privateJwk;
    expect(() => tokenSigner('etk_test', 'EdDSA', p256)).toThrow('EdDSA signs with an Ed25519 key');
  });
});
