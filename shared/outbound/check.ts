// The check made at job creation, before anything is charged: the URL is http(s), its host
// resolves to public addresses only, and that address accepts a TCP connection. A failed check is
// answered for free, so it is bounded per key and per target like any other request (takeCheck):
// what it reveals is whether a public name resolves, and whether a public host:port accepts a TCP
// connection (docs/security.md); never what a name resolves to inside our network (resolve.ts).
import net from 'node:net';
import { ApiError } from '../errors.ts';
import { LocalLimiter } from '../limits.ts';
import { parseTargetUrl } from './url.ts';
import { OutboundError, resolvePinned, type Resolver, type PinnedAddress } from './resolve.ts';

export interface PrecheckConfig {
  outbound: { allowCidrs: string[]; checkTimeoutMs: number; checksPerKeyPerMinute: number; checksPerTargetPerMinute: number };
}

const checkLimiters = new WeakMap<PrecheckConfig['outbound'], { perKey: LocalLimiter; perTarget: LocalLimiter }>();

/**
 * One reachability check of `target` (host:port) for `who` (the wallet), or 429 rate_limited: per
 * key and per target and minute, in this process's memory (as the per-key request limits).
 */
export function takeCheck(config: PrecheckConfig, who: string, target: string): void {
  let l = checkLimiters.get(config.outbound);
  if (!l)
    checkLimiters.set(
      config.outbound,
      (l = {
        perKey: new LocalLimiter(config.outbound.checksPerKeyPerMinute, 60_000),
        perTarget: new LocalLimiter(config.outbound.checksPerTargetPerMinute, 60_000),
      }),
    );
  const refuse = (d: { retryAfter: number }, what: string) =>
    new ApiError(
      'rate_limited',
      `too many reachability checks ${what} in the last minute; retry in ${d.retryAfter} s`,
      { retryAfter: d.retryAfter },
      { 'retry-after': String(d.retryAfter) },
    );
  // one after the other: a check refused for the key takes nothing of the target's
  const mine = l.perKey.take(who);
  if (!mine.allowed) throw refuse(mine, 'by this key');
  const theirs = l.perTarget.take(target.toLowerCase());
  if (!theirs.allowed) throw refuse(theirs, `of ${target}`);
}

/**
 * Throws ApiError `bad_url`, `blocked_address` or `unreachable` (all 400, nothing charged).
 * Only connects (no request is sent): a server that accepts connections counts as answering.
 */
export async function precheckTarget(
  raw: string,
  config: PrecheckConfig,
  resolver?: Resolver,
  who?: string,
): Promise<{ url: URL; pinned: PinnedAddress }> {
  const url = parseTargetUrl(raw);
  const timeoutMs = config.outbound.checkTimeoutMs;
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
  if (who !== undefined) takeCheck(config, who, `${url.hostname.replace(/\.+$/, '')}:${port}`);
  let pinned: PinnedAddress;
  try {
    pinned = await resolvePinned(url.hostname, { allowCidrs: config.outbound.allowCidrs, resolver, timeoutMs });
  } catch (e) {
    throw toApiError(e);
  }
  await tcpProbe(pinned, port, timeoutMs);
  return { url, pinned };
}

/** Map a guard error to the API's error codes. */
export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof OutboundError) {
    if (e.code === 'blocked_address') return new ApiError('blocked_address', e.message);
    if (e.code === 'bad_url') return new ApiError('bad_url', e.message);
    return new ApiError('unreachable', e.message);
  }
  return new ApiError('unreachable', (e as Error).message);
}

export function tcpProbe(p: PinnedAddress, port: number, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: p.address, port, family: p.family });
    const t = setTimeout(() => {
      s.destroy();
      reject(new ApiError('unreachable', `${p.host}:${port} did not accept a connection in ${timeoutMs} ms`));
    }, timeoutMs);
    s.once('connect', () => {
      clearTimeout(t);
      s.destroy();
      resolve();
    });
    s.once('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(t);
      reject(new ApiError('unreachable', `${p.host}:${port} does not answer (${e.code ?? e.message})`));
    });
  });
}
