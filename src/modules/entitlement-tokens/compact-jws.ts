import { createPrivateKey, type JsonWebKey, type KeyObject, sign } from 'node:crypto';
import type { JWK } from 'jose';

/** The JWS algorithms entitlement tokens are signed with. */
export type TokenAlgorithm = 'ES256' | 'EdDSA';

/** A private key ready to sign: imported once, its protected header encoded once. */
export interface TokenSigner {
  readonly kid: string;
  readonly alg: TokenAlgorithm;
  readonly key: KeyObject;
  /** base64url of `{"alg":…,"kid":…,"typ":"JWT"}`, the same for every token the key signs. */
  readonly encodedHeader: string;
}

/** A signer for a private JWK (`kty` EC P-256 for ES256, OKP Ed25519 for EdDSA). */
export function tokenSigner(kid: string, alg: TokenAlgorithm, privateJwk: JWK): TokenSigner {
  const key = createPrivateKey({ key: privateJwk as JsonWebKey, format: 'jwk' });
  const fits =
    alg === 'ES256'
      ? key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1'
      : key.asymmetricKeyType === 'ed25519';
  if (!fits) throw new Error(`${alg} signs with ${alg === 'ES256' ? 'a P-256' : 'an Ed25519'} key`);
  return { kid, alg, key, encodedHeader: base64url(JSON.stringify({ alg, kid, typ: 'JWT' })) };
}

/**
 * A compact JWS (RFC 7515) of `claims`, as `jose`'s `SignJWT` writes one, signed with `node:crypto` on
 * libuv's thread pool. `jose` signs through WebCrypto, whose ECDSA costs the event loop about 100 µs a
 * token (most of it turning OpenSSL's DER signature into R || S); an OpenSSL DER signature costs about
 * 30 µs off the event loop, and its conversion here next to nothing (docs/performance.md).
 */
export async function signCompactJws(signer: TokenSigner, claims: object): Promise<string> {
  const input = `${signer.encodedHeader}.${base64url(JSON.stringify(claims))}`;
  const signature = await new Promise<Buffer>((resolve, reject) =>
    sign(signer.alg === 'ES256' ? 'sha256' : null, Buffer.from(input), signer.key, (error, result) =>
      error ? reject(error) : resolve(result),
    ),
  );
  return `${input}.${(signer.alg === 'ES256' ? ecdsaDerToJose(signature, 32) : signature).toString('base64url')}`;
}

function base64url(text: string): string {
  return Buffer.from(text).toString('base64url');
}

/**
 * An ECDSA signature as JWS carries it (RFC 7518 §3.4: R and S, each left-padded to `size` bytes) from
 * the DER `ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }` OpenSSL writes (RFC 3279). A DER
 * integer has no leading zero byte unless its high bit is set, so it is `size + 1` bytes at most, and
 * shorter when its value is small.
 */
export function ecdsaDerToJose(der: Uint8Array, size: number): Buffer {
  const malformed = () => new Error('Malformed ECDSA signature');
  if (der[0] !== 0x30 || der.length < 8) throw malformed();
  // The sequence's length: short form below 128 bytes, else 0x81 and one length byte (P-521).
  let offset = der[1] === 0x81 ? 3 : 2;
  const raw = Buffer.alloc(2 * size);
  for (const half of [0, 1]) {
    if (der[offset] !== 0x02) throw malformed();
    const length = der[offset + 1]!;
    let start = offset + 2;
    const end = start + length;
    if (length === 0 || end > der.length) throw malformed();
    while (end - start > size && der[start] === 0) start++;
    if (end - start > size) throw malformed();
    raw.set(der.subarray(start, end), half * size + size - (end - start));
    offset = end;
  }
  if (offset !== der.length) throw malformed();
  return raw;
}
