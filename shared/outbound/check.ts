// The check made at job creation, before anything is charged: the URL is http(s), its host
// resolves to public addresses only, and that address accepts a TCP connection.
import net from 'node:net';
import { ApiError } from '../errors.ts';
import { parseTargetUrl } from './url.ts';
import { OutboundError, resolvePinned, type Resolver, type PinnedAddress } from './resolve.ts';

export interface PrecheckConfig {
  outbound: { allowCidrs: string[]; checkTimeoutMs: number };
}

/**
 * Throws ApiError `bad_url`, `blocked_address` or `unreachable` (all 400, nothing charged).
 * Only connects (no request is sent): a server that accepts connections counts as answering.
 */
export async function precheckTarget(raw: string, config: PrecheckConfig, resolver?: Resolver): Promise<{ url: URL; pinned: PinnedAddress }> {
  const url = parseTargetUrl(raw);
  const timeoutMs = config.outbound.checkTimeoutMs;
  let pinned: PinnedAddress;
  try {
    pinned = await resolvePinned(url.hostname, { allowCidrs: config.outbound.allowCidrs, resolver, timeoutMs });
  } catch (e) {
    throw toApiError(e);
  }
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
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
