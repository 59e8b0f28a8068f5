// Resolve a host once and decide: the address returned is the one to connect to (pinned), so a
// second DNS answer (rebinding) can never be used.
import { lookup as dnsLookup } from 'node:dns';
import type { LookupAddress } from 'node:dns';
import { blockReason, classifyHost, parseIp, unwrapIp } from './address.ts';

export type OutboundErrorCode = 'bad_url' | 'blocked_address' | 'unreachable' | 'timeout' | 'too_large' | 'too_many_redirects';

/** Why an outbound connection was not made (or not finished). `code` is stable; branch on it. */
export class OutboundError extends Error {
  readonly code: OutboundErrorCode;
  readonly details?: Record<string, unknown>;
  constructor(code: OutboundErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.code = code;
    this.details = details;
    this.name = 'OutboundError';
  }
}

/** dns.lookup with `all: true`; injectable so tests can make a name resolve to a chosen address. */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addrs) => (err ? reject(err) : resolve(addrs))),
  );

export interface GuardOptions {
  allowCidrs: readonly string[];
  resolver?: Resolver;
  /** Give up resolving after this long (unreachable). */
  timeoutMs?: number;
}

export interface PinnedAddress {
  host: string;
  address: string;
  family: 4 | 6;
}

/**
 * Resolve `hostname` (a WHATWG-parsed URL hostname) and check every address it has. A name with
 * any non-public address is refused as a whole: mixing answers is what rebinding tricks do.
 */
export async function resolvePinned(hostname: string, opts: GuardOptions): Promise<PinnedAddress> {
  const c = classifyHost(hostname);
  if (c.kind === 'blocked') throw new OutboundError('blocked_address', c.reason, { host: hostname });
  if (c.kind === 'ip' || c.kind === 'loopback-name') {
    const why = blockReason(c.address, opts.allowCidrs);
    if (why) throw new OutboundError('blocked_address', why, { host: hostname });
    return pin(hostname, c.address);
  }
  let addrs: LookupAddress[];
  const resolver = opts.resolver ?? systemResolver;
  try {
    addrs = await withTimeout(resolver(c.name), opts.timeoutMs ?? 10000, `resolving ${c.name}`);
  } catch (e) {
    if (e instanceof OutboundError) throw new OutboundError('unreachable', e.message, { host: hostname });
    throw new OutboundError('unreachable', `${c.name} does not resolve (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, {
      host: hostname,
    });
  }
  if (!addrs.length) throw new OutboundError('unreachable', `${c.name} has no address`, { host: hostname });
  for (const a of addrs) {
    // the message never says which address: what a name resolves to inside our network is an
    // answer of our resolver a client must not read (the address stays in `details` for our logs)
    if (blockReason(a.address, opts.allowCidrs))
      throw new OutboundError(
        'blocked_address',
        `${c.name} resolves to an address that is not public (private, loopback, link-local or reserved)`,
        { host: hostname, address: a.address },
      );
  }
  // prefer IPv4 when both exist: this machine may have no IPv6 route
  const chosen = addrs.find((a) => a.family === 4) ?? addrs[0]!;
  return pin(hostname, chosen.address);
}

function pin(host: string, address: string): PinnedAddress {
  const a = unwrapIp(parseIp(address)!);
  return { host, address: a.toString(), family: a.kind() === 'ipv4' ? 4 : 6 };
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new OutboundError('timeout', `${what} took longer than ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

/** A `lookup` for node:net / node:http that always answers the pinned address (no second lookup). */
export function pinnedLookup(p: PinnedAddress) {
  return (_host: string, opts: { all?: boolean } | number | undefined, cb: (...args: unknown[]) => void) => {
    if (typeof opts === 'object' && opts?.all) cb(null, [{ address: p.address, family: p.family }]);
    else cb(null, p.address, p.family);
  };
}

/** Parse and check the scheme of a customer URL; the only schemes we ever fetch. */
export function parseHttpUrl(raw: string | URL): URL {
  let u: URL;
  try {
    u = typeof raw === 'string' ? new URL(raw) : raw;
  } catch {
    throw new OutboundError('bad_url', `not a valid URL: ${String(raw).slice(0, 200)}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new OutboundError('bad_url', `only http and https are fetched, not ${u.protocol}`);
  if (!u.hostname) throw new OutboundError('bad_url', 'URL has no host');
  if (u.username || u.password) throw new OutboundError('bad_url', 'URL must not carry credentials');
  return u;
}

/** Resolve and check the host of a URL. */
export async function checkTarget(raw: string | URL, opts: GuardOptions): Promise<{ url: URL; pinned: PinnedAddress }> {
  const url = parseHttpUrl(raw);
  return { url, pinned: await resolvePinned(url.hostname, opts) };
}
