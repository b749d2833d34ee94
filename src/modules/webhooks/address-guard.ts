import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { BlockList, isIP } from 'node:net';

/** Resolves a host name to every address it has (the system resolver by default; tests inject one). */
export type Resolver = (hostname: string) => Promise<readonly { address: string; family: number }[]>;

export const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** Addresses no event is ever sent to: private, link-local (cloud metadata), shared, reserved, multicast. */
const NEVER = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  NEVER.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  // Unspecified, and the deprecated IPv4-compatible addresses (`::7f00:1` is `::127.0.0.1`); `::1` is
  // loopback, checked first.
  ['::', 96],
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  NEVER.addSubnet(net, prefix, 'ipv6');
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/**
 * The IPv4 address an IPv4-mapped IPv6 address (`::ffff:0:0/96`) stands for, however it is spelled
 * (`::ffff:127.0.0.1`, `::ffff:7f00:1`, `0:0:0:0:0:ffff:7f00:1`): the URL parser writes it one way.
 */
function mappedIPv4(address: string): string | undefined {
  const canonical = new URL(`http://[${address}]/`).hostname;
  const groups = /^\[::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})\]$/.exec(canonical);
  if (!groups) return undefined;
  const high = Number.parseInt(groups[1] as string, 16);
  const low = Number.parseInt(groups[2] as string, 16);
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/** Raised when a destination is refused; the delivery records it as the attempt's outcome. */
export class RefusedAddressError extends Error {
  readonly code = 'REFUSED_ADDRESS';
}

/**
 * Where events may go. Checked on the address actually connected to, at delivery time: a name that
 * resolved to a public address when the endpoint was saved and to a private one now (DNS rebinding) is
 * refused, and the connection is made to the very address that was checked. Loopback is allowed in
 * development only, so a receiver on the same machine works there.
 */
export class AddressGuard {
  constructor(
    private readonly resolver: Resolver,
    private readonly allowLoopback: boolean,
  ) {}

  /** Why `address` is refused, or undefined when it may be used. */
  refusal(address: string): string | undefined {
    const family = isIP(address);
    if (family === 0) return `not an IP address (${address})`;
    const mapped = family === 6 ? mappedIPv4(address) : undefined;
    if (mapped) return this.refusal(mapped);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (LOOPBACK.check(address, type)) {
      return this.allowLoopback ? undefined : `a loopback address (${address})`;
    }
    if (NEVER.check(address, type)) return `a private, link-local or reserved address (${address})`;
    return undefined;
  }

  /** Throws RefusedAddressError when a literal address in a URL is refused; names are checked by `lookup`. */
  checkHost(hostname: string): void {
    const bare = hostname.replace(/^\[|\]$/g, '');
    if (isIP(bare) === 0) return;
    const reason = this.refusal(bare);
    if (reason) throw new RefusedAddressError(`refused: ${reason}`);
  }

  /**
   * A `lookup` for node's HTTP client: resolves with the injected resolver, refuses the name when any of
   * its addresses is refused, and hands the checked addresses to the connection.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.resolver(hostname).then(
      (addresses) => {
        const wanted = addresses.filter((a) => !options.family || a.family === options.family);
        if (wanted.length === 0) {
          callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
          return;
        }
        for (const { address } of wanted) {
          const reason = this.refusal(address);
          if (reason) {
            callback(new RefusedAddressError(`refused: ${hostname} resolves to ${reason}`), '', 0);
            return;
          }
        }
        if (options.all)
          callback(
            null,
            wanted.map((a) => ({ address: a.address, family: a.family })),
          );
        else callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (error: unknown) => callback(error as NodeJS.ErrnoException, '', 0),
    );
  };
}
