/**
 * SSRF protection: a webhook may only reach public addresses. Every address a name
 * resolves to must be public unicast, outside every special-purpose range; IPv4-mapped and
 * NAT64 forms are judged by the IPv4 address they carry. Operators can let named private
 * ranges through (tests, on-premise receivers).
 */
import dns from 'node:dns';
import ipaddr from 'ipaddr.js';

export type Resolver = (hostname: string) => Promise<string[]>;

export const systemResolver: Resolver = async (hostname) => {
  const found = await dns.promises.lookup(hostname, { all: true, verbatim: true });
  return found.map((a) => a.address);
};

export class BlockedDestinationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BlockedDestinationError';
  }
}

export interface DestinationPolicy {
  /** Why this address may not be reached, or undefined when it may. */
  refusal(address: string): string | undefined;
  /** Resolves `hostname` and returns its addresses, all of them allowed; throws BlockedDestinationError otherwise. */
  resolveAllowed(hostname: string): Promise<string[]>;
}

interface SpecialRange {
  cidr: string;
  /** Completes "<address> is ... address". */
  what: string;
  /** Judged by the IPv4 address in its last 32 bits instead (mapped and NAT64 forms of public hosts are fine). */
  embedsV4?: true;
}

/**
 * The IANA IPv4 and IPv6 Special-Purpose Address Registries, in one table: every range that is
 * not an ordinary public destination. The first match names the reason, so narrower ranges come
 * before the ranges that contain them. ipaddr.js's own range() is consulted after it as a second
 * net, and IPv6 outside 2000::/3 (the only block IANA allocates for global unicast) is refused.
 */
const SPECIAL_RANGES: readonly SpecialRange[] = [
  { cidr: '0.0.0.0/8', what: 'an unspecified ("this network")' },
  { cidr: '10.0.0.0/8', what: 'a private' },
  { cidr: '100.64.0.0/10', what: 'a carrier-grade NAT' },
  { cidr: '127.0.0.0/8', what: 'a loopback' },
  { cidr: '169.254.0.0/16', what: 'a link-local' },
  { cidr: '172.16.0.0/12', what: 'a private' },
  { cidr: '192.0.0.0/24', what: 'a reserved (IETF protocol assignments)' },
  { cidr: '192.0.2.0/24', what: 'a reserved (documentation)' },
  { cidr: '192.31.196.0/24', what: 'a reserved (AS112)' },
  { cidr: '192.52.193.0/24', what: 'a reserved (AMT)' },
  { cidr: '192.88.99.0/24', what: 'a reserved (6to4 relay anycast)' },
  { cidr: '192.168.0.0/16', what: 'a private' },
  { cidr: '192.175.48.0/24', what: 'a reserved (AS112)' },
  { cidr: '198.18.0.0/15', what: 'a reserved (benchmarking)' },
  { cidr: '198.51.100.0/24', what: 'a reserved (documentation)' },
  { cidr: '203.0.113.0/24', what: 'a reserved (documentation)' },
  { cidr: '224.0.0.0/4', what: 'a multicast' },
  { cidr: '255.255.255.255/32', what: 'a broadcast' },
  { cidr: '240.0.0.0/4', what: 'a reserved (future use)' },
  { cidr: '::/128', what: 'an unspecified' },
  { cidr: '::1/128', what: 'a loopback' },
  // IPv4-compatible (::7f00:1 is ::127.0.0.1): deprecated, and some stacks still route it to the IPv4 host.
  { cidr: '::/96', what: 'a reserved (IPv4-compatible)' },
  { cidr: '::ffff:0:0/96', what: 'an IPv4-mapped', embedsV4: true },
  { cidr: '::ffff:0:0:0/96', what: 'a reserved (IPv4-translated)' },
  { cidr: '64:ff9b::/96', what: 'a NAT64', embedsV4: true },
  { cidr: '64:ff9b:1::/48', what: 'a reserved (local-use NAT64)' },
  { cidr: '100::/64', what: 'a reserved (discard-only)' },
  { cidr: '100:0:0:1::/64', what: 'a reserved (dummy prefix)' },
  // Teredo (2001::/32), benchmarking, AMT, AS112, ORCHID...: none is a webhook receiver, so the whole block goes.
  { cidr: '2001::/23', what: 'a reserved (IETF protocol assignments, Teredo)' },
  { cidr: '2001:db8::/32', what: 'a reserved (documentation)' },
  // 6to4 is deprecated (RFC 7526) and tunnels to whatever IPv4 address it embeds.
  { cidr: '2002::/16', what: 'a reserved (6to4)' },
  { cidr: '2620:4f:8000::/48', what: 'a reserved (AS112)' },
  { cidr: '3fff::/20', what: 'a reserved (documentation)' },
  { cidr: '5f00::/16', what: 'a reserved (segment routing)' },
  { cidr: 'fc00::/7', what: 'a private (unique local)' },
  { cidr: 'fe80::/10', what: 'a link-local' },
  { cidr: 'fec0::/10', what: 'a reserved (site-local)' },
  { cidr: 'ff00::/8', what: 'a multicast' },
];

type Address = ipaddr.IPv4 | ipaddr.IPv6;
const PARSED_RANGES = SPECIAL_RANGES.map((r) => ({ ...r, range: ipaddr.parseCIDR(r.cidr) }));
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

const inRange = (addr: Address, [range, bits]: [Address, number]) => addr.kind() === range.kind() && addr.match(range, bits);

/**
 * Parses an address. ipaddr.js reads the deprecated `::a.b.c.d` as the IPv4-mapped
 * `::ffff:a.b.c.d`, which would let `::8.8.8.8`-style IPv4-compatible forms through as mapped
 * ones; a dotted IPv6 tail is rewritten into its two hex groups first.
 */
function parseAddress(text: string): Address {
  const dotted = /^(.*:)(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(%.*)?$/.exec(text);
  if (!dotted) return ipaddr.parse(text);
  const [a, b, c, d] = dotted.slice(2, 6).map(Number) as [number, number, number, number];
  if ([a, b, c, d].some((o) => o > 255)) throw new Error('not an IP address');
  const hex = (hi: number, lo: number) => ((hi << 8) | lo).toString(16);
  return ipaddr.IPv6.parse(`${dotted[1]}${hex(a, b)}:${hex(c, d)}${dotted[6] ?? ''}`);
}

/** The IPv4 address in the last 32 bits of an IPv6 address. */
function embeddedV4(addr: ipaddr.IPv6): ipaddr.IPv4 {
  const [hi, lo] = addr.parts.slice(6) as [number, number];
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
}

export function createDestinationPolicy(opts: { allowCidrs?: string[]; resolver?: Resolver } = {}): DestinationPolicy {
  const allowed = (opts.allowCidrs ?? []).map((cidr) => ipaddr.parseCIDR(cidr));
  const resolver = opts.resolver ?? systemResolver;

  /** What kind of non-public address `addr` is ("a loopback"), or undefined when it may be reached. */
  function kindOf(addr: Address): string | undefined {
    if (allowed.some((r) => inRange(addr, r))) return undefined;
    const special = PARSED_RANGES.find((r) => inRange(addr, r.range));
    if (special?.embedsV4) {
      const v4 = embeddedV4(addr as ipaddr.IPv6);
      const inner = kindOf(v4);
      return inner && `${special.what} address of ${v4.toString()}, ${inner}`;
    }
    if (special) return special.what;
    const range = addr.range();
    if (range !== 'unicast') return `a reserved (${range})`;
    if (addr.kind() === 'ipv6' && !inRange(addr, GLOBAL_UNICAST_V6)) return 'a reserved (outside global unicast 2000::/3)';
    return undefined;
  }

  function refusal(address: string): string | undefined {
    let addr: Address;
    try {
      addr = parseAddress(address.replace(/^\[|\]$/g, ''));
    } catch {
      return `"${address}" is not an IP address`;
    }
    const kind = kindOf(addr);
    return kind && `${address} is ${kind} address`;
  }

  return {
    refusal,
    async resolveAllowed(hostname) {
      const host = hostname.replace(/^\[|\]$/g, '');
      let addresses: string[];
      if (ipaddr.isValid(host)) addresses = [host];
      else {
        try {
          addresses = await resolver(host);
        } catch {
          throw new BlockedDestinationError(`host "${host}" does not resolve`);
        }
        if (addresses.length === 0) throw new BlockedDestinationError(`host "${host}" does not resolve`);
      }
      for (const address of addresses) {
        const why = refusal(address);
        if (why) throw new BlockedDestinationError(`host "${host}" resolves to ${why}`);
      }
      return addresses;
    },
  };
}

/** Checks a webhook url as a whole: https, no credentials, a public destination. Returns the reason it is refused. */
export async function urlRefusal(policy: DestinationPolicy, raw: string): Promise<string | undefined> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'url is not a valid absolute URL';
  }
  if (url.protocol !== 'https:') return 'url must use https://';
  if (url.username || url.password) return 'url must not contain credentials';
  if (raw.length > 2048) return 'url is longer than 2048 characters';
  try {
    await policy.resolveAllowed(url.hostname);
  } catch (err) {
    if (err instanceof BlockedDestinationError) return err.message;
    throw err;
  }
  return undefined;
}
