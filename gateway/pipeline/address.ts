// The client address, computed in this one place: the peer of the TCP connection, or, when that
// peer is a proxy the operator trusts (`server.trustedProxies`), the right-most X-Forwarded-For
// address that is not one of them (what Express's `trust proxy` and nginx's real_ip_recursive do).
// Everything left of it was written by the client and is never believed. Every per-address limit
// counts by `group`: the address itself for IPv4, its /64 network for IPv6 (one customer line gets
// a whole /64, so counting single IPv6 addresses limits nobody).
import ipaddr from 'ipaddr.js';
import type { Config } from '../../shared/config/index.ts';

type Addr = ipaddr.IPv4 | ipaddr.IPv6;

export interface ClientAddress {
  /** The client's address as seen by the last trusted hop (logged; bound to challenges). */
  ip: string;
  /** What per-address limits count by: the IPv4 address, or the IPv6 network of `server.ipv6PrefixLength` bits. */
  group: string;
  /** The TCP peer is one of `server.trustedProxies`: the request came through the operator's proxy. */
  viaTrustedProxy?: boolean;
}

/** Names usable in `server.trustedProxies` besides CIDRs and single addresses. */
const NAMED: Record<string, string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  private: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

/** Parse an address as uWS or a header gives it; IPv4-mapped IPv6 is taken as the IPv4 address. */
function parse(s: string): Addr | null {
  const raw = s.trim().replace(/^\[(.*)\](?::\d+)?$/, '$1');
  if (!ipaddr.isValid(raw) || raw.includes('%')) {
    // an IPv4 address with a port (some proxies write one)
    const m = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(raw);
    return m && ipaddr.IPv4.isValidFourPartDecimal(m[1]!) ? ipaddr.IPv4.parse(m[1]!) : null;
  }
  if (ipaddr.IPv4.isValid(raw) && !ipaddr.IPv4.isValidFourPartDecimal(raw)) return null;
  const a = ipaddr.parse(raw);
  if (a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress()) return (a as ipaddr.IPv6).toIPv4Address();
  return a;
}

/** The trusted-proxy list as CIDRs; throws on an entry that is neither a CIDR, an address nor a name. */
export function trustedRanges(config: Pick<Config['server'], 'trustedProxies' | 'trustProxy'>): [Addr, number][] {
  const entries = [...config.trustedProxies, ...(config.trustProxy ? ['loopback'] : [])];
  return entries
    .flatMap((e) => NAMED[e] ?? [e])
    .map((c) => {
      if (c.includes('/')) {
        const [a, bits] = ipaddr.parseCIDR(c);
        return [a, bits] as [Addr, number];
      }
      const a = parse(c);
      if (!a) throw new Error(`server.trustedProxies: ${c} is not an address, a CIDR or one of ${Object.keys(NAMED).join(', ')}`);
      return [a, a.kind() === 'ipv4' ? 32 : 128] as [Addr, number];
    });
}

/** The grouping of an address for per-address limits. */
export function addressGroup(a: Addr, ipv6PrefixLength: number): string {
  if (a.kind() === 'ipv4' || ipv6PrefixLength >= 128) return a.toString();
  const bytes = a.toByteArray();
  for (let i = 0; i < 16; i++) {
    const keep = Math.max(0, Math.min(8, ipv6PrefixLength - i * 8));
    bytes[i] = bytes[i]! & ((0xff << (8 - keep)) & 0xff);
  }
  return `${ipaddr.fromByteArray(bytes).toString()}/${ipv6PrefixLength}`;
}

export type ClientAddressOf = (peer: string, forwardedFor: string | undefined) => ClientAddress;

/** The one function that says who the client is, for a gateway's configuration. */
export function createClientAddress(server: Pick<Config['server'], 'trustedProxies' | 'trustProxy' | 'ipv6PrefixLength'>): ClientAddressOf {
  const trusted = trustedRanges(server);
  const isTrusted = (a: Addr) => trusted.some(([net, bits]) => net.kind() === a.kind() && a.match(net, bits));
  const prefix = server.ipv6PrefixLength;
  const of = (a: Addr | null, text: string): ClientAddress =>
    a ? { ip: a.toString(), group: addressGroup(a, prefix) } : { ip: text, group: text };
  return (peer, forwardedFor) => {
    let client = parse(peer);
    if (!client) return of(null, peer);
    if (!trusted.length || !isTrusted(client)) return of(client, peer);
    if (!forwardedFor) return { ...of(client, peer), viaTrustedProxy: true };
    // right to left: each hop we trust vouches for the one before it; the first we do not trust is the client
    const hops = forwardedFor.split(',');
    for (let i = hops.length - 1; i >= 0; i--) {
      const a = parse(hops[i]!);
      // a hop a trusted proxy wrote but that is no address: stop at the last one we could read
      if (!a) break;
      client = a;
      if (!isTrusted(a)) break;
    }
    return { ...of(client, peer), viaTrustedProxy: true };
  };
}
