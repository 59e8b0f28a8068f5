// Which addresses and host names are public. Pure functions, no network: the guard (resolve.ts),
// the fetcher (fetch.ts) and the proxy (proxy.ts) all decide with these.
import ipaddr from 'ipaddr.js';

type Addr = ipaddr.IPv4 | ipaddr.IPv6;
type Cidr = [Addr, number];

/**
 * Every IANA special-purpose IPv4 block (iana-ipv4-special-registry), plus multicast and the
 * reserved class E. We refuse whole blocks even where IANA marks a single address in them as
 * globally reachable (192.0.0.9, 192.0.0.10): nothing a customer needs lives there.
 */
const V4_BLOCKED = [
  '0.0.0.0/8', // "this network"
  '10.0.0.0/8', // private
  '100.64.0.0/10', // carrier-grade NAT
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local (cloud metadata 169.254.169.254)
  '172.16.0.0/12', // private
  '192.0.0.0/24', // IETF protocol assignments
  '192.0.2.0/24', // TEST-NET-1
  '192.31.196.0/24', // AS112-v4
  '192.52.193.0/24', // AMT
  '192.88.99.0/24', // deprecated 6to4 relay anycast
  '192.168.0.0/16', // private
  '192.175.48.0/24', // direct delegation AS112
  '198.18.0.0/15', // benchmarking
  '198.51.100.0/24', // TEST-NET-2
  '203.0.113.0/24', // TEST-NET-3
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, and 255.255.255.255 broadcast
];

/**
 * IPv6: only global unicast (2000::/3) can be public at all; inside it, the special-purpose
 * blocks of iana-ipv6-special-registry. Forms that embed an IPv4 address (mapped ::ffff:0:0/96,
 * NAT64 64:ff9b::/96) are judged by the embedded address; compatible (::/96), 6to4 (2002::/16),
 * Teredo (2001::/32) and local NAT64 (64:ff9b:1::/48) are refused outright: a tunnel endpoint is
 * a way around the check, never where a web page lives.
 */
const V6_GLOBAL = '2000::/3';
const V6_BLOCKED = [
  '2001::/23', // IETF protocol assignments (includes Teredo 2001::/32, ORCHID, AMT, benchmarking 2001:2::/48)
  '2001:db8::/32', // documentation
  '2002::/16', // 6to4
  '3fff::/20', // documentation (RFC 9637)
  '5f00::/16', // SRv6 SIDs
];

const parseCidrs = (list: readonly string[]): Cidr[] => list.map((c) => ipaddr.parseCIDR(c) as Cidr);
const v4Blocked = parseCidrs(V4_BLOCKED);
const v6Global = ipaddr.parseCIDR(V6_GLOBAL) as Cidr;
const v6Blocked = parseCidrs(V6_BLOCKED);
const nat64 = ipaddr.parseCIDR('64:ff9b::/96') as Cidr;

const cidrCache = new Map<string, Cidr[]>();
function allowList(allowCidrs: readonly string[]): Cidr[] {
  const key = allowCidrs.join(',');
  let v = cidrCache.get(key);
  if (!v) {
    v = allowCidrs.map(
      (c) =>
        (c.includes('/')
          ? ipaddr.parseCIDR(c)
          : (() => {
              const a = ipaddr.parse(c);
              return [a, a.kind() === 'ipv4' ? 32 : 128];
            })()) as Cidr,
    );
    cidrCache.set(key, v);
  }
  return v;
}

const inAny = (a: Addr, list: Cidr[]) => list.some(([net, bits]) => net.kind() === a.kind() && a.match(net, bits));

/** Parse an IP literal (with or without [brackets]); null when it is not one. Zone ids are refused (null). */
export function parseIp(s: string): Addr | null {
  const raw = s.startsWith('[') && s.endsWith(']') ? s.slice(1, -1) : s;
  if (raw.includes('%')) return null;
  // only strict dotted-quad for IPv4: ipaddr.js would also accept "0x7f.1"-style forms, which the
  // WHATWG URL parser has already normalised by the time a host reaches us
  if (ipaddr.IPv4.isValidFourPartDecimal(raw)) return ipaddr.IPv4.parse(raw);
  if (raw.includes(':') && ipaddr.IPv6.isValid(raw)) return ipaddr.IPv6.parse(raw);
  return null;
}

/** The IPv4 address a v6 address stands for (mapped or NAT64), else the address itself. */
export function unwrapIp(a: Addr): Addr {
  if (a.kind() === 'ipv6') {
    const v6 = a as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) return v6.toIPv4Address();
    if (v6.match(nat64[0], nat64[1])) {
      const b = v6.toByteArray();
      return new ipaddr.IPv4(b.slice(12, 16));
    }
  }
  return a;
}

/** Why an address is not public, or null when it is public. */
export function blockReason(ip: string | Addr, allowCidrs: readonly string[] = []): string | null {
  const parsed = typeof ip === 'string' ? parseIp(ip) : ip;
  if (!parsed) return `not an IP address: ${String(ip)}`;
  const allow = allowList(allowCidrs);
  if (allow.length && (inAny(parsed, allow) || inAny(unwrapIp(parsed), allow))) return null;
  const a = unwrapIp(parsed);
  if (a.kind() === 'ipv4') return inAny(a, v4Blocked) ? `${a.toString()} is in a special-purpose IPv4 range` : null;
  if (!a.match(v6Global[0], v6Global[1])) return `${a.toString()} is not IPv6 global unicast`;
  if (inAny(a, v6Blocked)) return `${a.toString()} is in a special-purpose IPv6 range`;
  return null;
}

/** True when a connection to this address may be made on a customer's behalf. */
export const isPublicAddress = (ip: string, allowCidrs: readonly string[] = []) => blockReason(ip, allowCidrs) === null;

/** Names that must never be looked up: cloud metadata services and special-use domains (RFC 6761 and later). */
const BLOCKED_NAMES = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
  'metadata.azure.internal',
  'metadata.packet.net',
  'kubernetes.default',
  'kubernetes.default.svc',
]);
const BLOCKED_SUFFIXES = [
  '.internal',
  '.local',
  '.localdomain',
  '.home.arpa',
  '.lan',
  '.intranet',
  '.corp',
  '.private',
  '.invalid',
  '.test',
  '.example',
  '.onion',
  '.alt',
  '.arpa',
  '.svc',
  '.cluster.local',
];

export type HostClass =
  | { kind: 'ip'; address: string; family: 4 | 6 }
  | { kind: 'loopback-name'; address: string; family: 4 } // localhost: never asked to DNS, judged as 127.0.0.1
  | { kind: 'name'; name: string }
  | { kind: 'blocked'; reason: string };

/**
 * Classify the host of an already WHATWG-parsed URL (so decimal, octal and hex IPv4 spellings and
 * percent-encoding are already normalised to dotted quads). IP literals are returned as addresses
 * still to be checked with blockReason(); names are to be resolved.
 */
export function classifyHost(hostname: string): HostClass {
  let h = hostname.toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  const ip = parseIp(h);
  if (ip) return { kind: 'ip', address: ip.toString(), family: ip.kind() === 'ipv4' ? 4 : 6 };
  if (h.includes(':') || h.includes('%')) return { kind: 'blocked', reason: `malformed host ${hostname}` };
  // anything the URL parser would have turned into an IPv4 address, if it reaches here unparsed
  if (/^[0-9.]+$/.test(h) || /^0x[0-9a-f]+$/i.test(h)) return { kind: 'blocked', reason: `numeric host spelling ${hostname}` };
  h = h.replace(/\.+$/, '');
  if (!h) return { kind: 'blocked', reason: 'empty host' };
  if (h === 'localhost' || h.endsWith('.localhost')) return { kind: 'loopback-name', address: '127.0.0.1', family: 4 };
  if (BLOCKED_NAMES.has(h)) return { kind: 'blocked', reason: `${h} is a metadata or cluster-internal name` };
  if (BLOCKED_SUFFIXES.some((s) => h.endsWith(s))) return { kind: 'blocked', reason: `${h} is under a special-use or internal domain` };
  if (!h.includes('.')) return { kind: 'blocked', reason: `single-label host ${h} is not a public name` };
  return { kind: 'name', name: h };
}
