import { Webhook } from 'standardwebhooks';
import { AddressGuard } from '../../src/modules/webhooks/address-guard.js';
import { SecretBox } from '../../src/modules/webhooks/secret-box.js';
import { newSigningSecret, signedHeaders } from '../../src/modules/webhooks/webhook-signing.js';

/** The pure parts of outbound webhooks: which addresses are refused, secrets at rest, signatures. */

const noResolver = async () => {
  throw new Error('no name is resolved in these tests');
};

describe('AddressGuard', () => {
  const production = new AddressGuard(noResolver, false);
  const development = new AddressGuard(noResolver, true);

  it.each([
    ['10.1.2.3'],
    ['172.16.0.1'],
    ['172.31.255.255'],
    ['192.168.1.1'],
    ['169.254.169.254'],
    ['100.100.100.200'],
    ['0.0.0.0'],
    ['224.0.0.1'],
    ['fe80::1'],
    ['fc00::1'],
    ['fd00:ec2::254'],
    ['::'],
    ['::ffff:10.0.0.1'],
    ['::ffff:169.254.169.254'],
  ])('refuses %s everywhere', (address) => {
    expect(production.refusal(address)).toBe(
      `a private, link-local or reserved address (${address.replace(/^::ffff:/, '')})`,
    );
    expect(development.refusal(address)).toBeDefined();
  });

  it.each([['127.0.0.1'], ['127.9.9.9'], ['::1'], ['::ffff:127.0.0.1']])(
    'refuses loopback %s in production only',
    (address) => {
      expect(production.refusal(address)).toBe(`a loopback address (${address.replace(/^::ffff:/, '')})`);
      expect(development.refusal(address)).toBeUndefined();
    },
  );

  it.each([
    ['::7f00:1', 'a private, link-local or reserved address (::7f00:1)'],
    ['::127.0.0.1', 'a private, link-local or reserved address (::127.0.0.1)'],
    ['::808:808', 'a private, link-local or reserved address (::808:808)'],
    ['::ffff:7f00:1', 'a loopback address (127.0.0.1)'],
    ['0:0:0:0:0:ffff:a9fe:a9fe', 'a private, link-local or reserved address (169.254.169.254)'],
  ])('refuses the IPv4-compatible range ::/96 and IPv4-mapped addresses in hex, %s', (address, reason) => {
    expect(production.refusal(address)).toBe(reason);
  });

  it.each([['93.184.215.14'], ['172.32.0.1'], ['2606:4700::1111']])(
    'allows the public address %s',
    (address) => {
      expect(production.refusal(address)).toBeUndefined();
    },
  );

  it('checks literal hosts in URLs, bracketed IPv6 included, and leaves names to the resolver', () => {
    expect(() => production.checkHost('[::1]')).toThrow('refused: a loopback address (::1)');
    expect(() => production.checkHost('169.254.169.254')).toThrow(
      'refused: a private, link-local or reserved address (169.254.169.254)',
    );
    expect(() => production.checkHost('hooks.example.com')).not.toThrow();
  });

  it('refuses a name when any of its addresses is refused, and hands over only checked addresses', async () => {
    const guard = new AddressGuard(
      async (name) =>
        name === 'mixed.example.com'
          ? [
              { address: '93.184.215.14', family: 4 },
              { address: '10.0.0.1', family: 4 },
            ]
          : [{ address: '93.184.215.14', family: 4 }],
      false,
    );
    const lookup = (name: string, all: boolean) =>
      new Promise((resolve, reject) =>
        guard.lookup(name, { all }, (error, address, family) =>
          error ? reject(error) : resolve({ address, family }),
        ),
      );
    await expect(lookup('mixed.example.com', false)).rejects.toThrow(
      'refused: mixed.example.com resolves to a private, link-local or reserved address (10.0.0.1)',
    );
    await expect(lookup('public.example.com', false)).resolves.toEqual({
      address: '93.184.215.14',
      family: 4,
    });
    await expect(lookup('public.example.com', true)).resolves.toEqual({
      address: [{ address: '93.184.215.14', family: 4 }],
      family: undefined,
    });
  });
});

describe('SecretBox', () => {
  const key = Buffer.alloc(32, 7).toString('base64');

  it('gives back what it sealed, with a fresh IV each time', () => {
    const box = new SecretBox(key);
    const secret = newSigningSecret();
    const a = box.seal(secret);
    const b = box.seal(secret);
    expect(a).not.toBe(b);
    expect(a).not.toContain(secret.slice(6));
    expect(box.open(a)).toBe(secret);
    expect(box.open(b)).toBe(secret);
  });

  it('refuses a tampered ciphertext and another key', () => {
    const sealed = new SecretBox(key).seal('whsec_abc');
    const raw = Buffer.from(sealed.slice(3), 'base64');
    raw[raw.length - 1]! ^= 1;
    expect(() => new SecretBox(key).open(`v1:${raw.toString('base64')}`)).toThrow();
    expect(() => new SecretBox(Buffer.alloc(32, 8).toString('base64')).open(sealed)).toThrow();
    expect(() => new SecretBox(Buffer.alloc(16).toString('base64'))).toThrow(
      'the secret key must be 32 bytes',
    );
  });
});

describe('signedHeaders', () => {
  it('signs so that the Standard Webhooks library verifies with either of two secrets', () => {
    const [oldSecret, newSecret] = [newSigningSecret(), newSigningSecret()];
    expect(newSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const body = JSON.stringify({
      type: 'customer.created',
      timestamp: new Date().toISOString(),
      data: { id: 'cus_1' },
    });
    const headers = signedHeaders([newSecret, oldSecret], 'msg_1', new Date(), body);
    expect(headers['webhook-id']).toBe('msg_1');
    expect(headers['webhook-signature'].split(' ').map((s) => s.slice(0, 3))).toEqual(['v1,', 'v1,']);
    for (const secret of [oldSecret, newSecret]) {
      expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    }
    expect(() => new Webhook(newSigningSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(newSecret).verify(`${body} `, headers)).toThrow();
  });
});
