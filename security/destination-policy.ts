/**
 * SSRF protection: a webhook may only reach public addresses. Every address a name
 * resolves to must be public unicast, IPv4-mapped and other embedded-IPv4 forms
 * included. Operators can let named private ranges through (tests, on-premise receivers).
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

const RANGE_WORDS: Record<string, string> = {
  loopback: 'a loopback',
  private: 'a private',
  uniqueLocal: 'a private',
  linkLocal: 'a link-local',
  carrierGradeNat: 'a carrier-grade NAT',
  multicast: 'a multicast',
  unspecified: 'an unspecified',
  broadcast: 'a broadcast',
  ipv4Mapped: 'an IPv4-mapped',
};

export function createDestinationPolicy(opts: { allowCidrs?: string[]; resolver?: Resolver } = {}): DestinationPolicy {
  const allowed = (opts.allowCidrs ?? []).map((cidr) => ipaddr.parseCIDR(cidr));
  const resolver = opts.resolver ?? systemResolver;

  function isAllowedByOperator(addr: ipaddr.IPv4 | ipaddr.IPv6): boolean {
    return allowed.some(([range, bits]) => addr.kind() === range.kind() && addr.match(range, bits));
  }

  function refusal(address: string): string | undefined {
    let addr: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      addr = ipaddr.parse(address.replace(/^\[|\]$/g, ''));
    } catch {
      return `"${address}" is not an IP address`;
    }
    // Judge an IPv4-mapped IPv6 address (::ffff:127.0.0.1) by the IPv4 address it carries.
    if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()) addr = (addr as ipaddr.IPv6).toIPv4Address();
    if (isAllowedByOperator(addr)) return undefined;
    const range = addr.range();
    if (range === 'unicast') return undefined;
    return `${address} is ${RANGE_WORDS[range] ?? `a reserved (${range})`} address`;
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
