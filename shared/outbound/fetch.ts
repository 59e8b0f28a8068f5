// Fetch over http(s) on a customer's behalf: every hop is resolved once, checked, and connected to
// the exact address that was checked; redirects are followed by hand so each one is checked again.
import http from 'node:http';
import https from 'node:https';
import zlib from 'node:zlib';
import { promisify } from 'node:util';
import type { IncomingHttpHeaders } from 'node:http';
import { OutboundError, checkTarget, parseHttpUrl, pinnedLookup, type GuardOptions, type PinnedAddress } from './resolve.ts';

export interface GuardedFetchOptions extends GuardOptions {
  method?: 'GET' | 'HEAD' | 'POST' | 'PUT';
  headers?: Record<string, string>;
  /**
   * Headers sent only on a hop to this origin (the first request, and a redirect back to it), never
   * to any other: a caller's credentials (websitepro `headers`/`cookies`). They replace `headers` of
   * the same name, compared without case.
   */
  originHeaders?: { origin: string; headers: Record<string, string> };
  body?: string | Buffer;
  /** Redirects followed; each hop is checked again. Default 5 (config.outbound.maxRedirects). */
  maxRedirects?: number;
  /** Largest body accepted, after decompression. Default 10 MiB. */
  maxBytes?: number;
  /** Whole fetch, all hops included. Default 20 s. */
  timeoutMs?: number;
  /** TCP (and TLS) connect of one hop. Default 10 s. */
  connectTimeoutMs?: number;
  signal?: AbortSignal;
  /** Undo gzip / br / deflate content encodings (and ask for them). Default true. */
  decompress?: boolean;
  /** Extra trusted CA certificates (PEM) for https; the system store otherwise. Certificates are always verified. */
  ca?: string | Buffer | (string | Buffer)[];
}

export interface GuardedResponse {
  /** Final URL, after redirects. */
  url: string;
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Every URL requested, the first one included. */
  chain: string[];
  /** The address the final response came from. */
  address: string;
}

/**
 * Our product token: the `User-agent:` line of robots.txt a crawl obeys (shared/crawl/robots.ts), and the
 * name in the User-Agent every fetch sends, so a site owner writes the rule for what their logs show.
 */
export const ROBOTS_AGENT = 'PayloadsFetcher';
export const DEFAULT_USER_AGENT = `Mozilla/5.0 (compatible; ${ROBOTS_AGENT}/1.0)`;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Build the fetch options from config (outbound and an optional size cap/timeout). */
export function fetchOptionsFromConfig(
  config: { outbound: { allowCidrs: string[]; maxRedirects: number; connectTimeoutMs: number } },
  extra: Partial<GuardedFetchOptions> = {},
): GuardedFetchOptions {
  return {
    allowCidrs: config.outbound.allowCidrs,
    maxRedirects: config.outbound.maxRedirects,
    connectTimeoutMs: config.outbound.connectTimeoutMs,
    ...extra,
  };
}

export async function guardedFetch(raw: string | URL, opts: GuardedFetchOptions): Promise<GuardedResponse> {
  const maxRedirects = opts.maxRedirects ?? 5;
  const timeoutMs = opts.timeoutMs ?? 20000;
  const deadline = Date.now() + timeoutMs;
  let url = parseHttpUrl(raw);
  let method = opts.method ?? 'GET';
  let body = opts.body;
  let headers = { ...(opts.headers ?? {}) };
  const chain: string[] = [];
  for (let hop = 0; ; hop++) {
    if (opts.signal?.aborted) throw new OutboundError('timeout', 'fetch aborted', { url: url.href });
    chain.push(url.href);
    const left = deadline - Date.now();
    if (left <= 0) throw new OutboundError('timeout', `fetch took longer than ${timeoutMs} ms`, { url: url.href });
    const { pinned } = await checkTarget(url, { ...opts, timeoutMs: Math.min(left, opts.timeoutMs ?? left) });
    const hopHeaders =
      opts.originHeaders && url.origin === opts.originHeaders.origin ? withHeaders(headers, opts.originHeaders.headers) : headers;
    const res = await requestOnce(url, pinned, { ...opts, method, headers: hopHeaders, body }, deadline, timeoutMs);
    if (REDIRECTS.has(res.status) && res.headers.location) {
      if (hop >= maxRedirects) throw new OutboundError('too_many_redirects', `more than ${maxRedirects} redirects`, { chain });
      let next: URL;
      try {
        next = new URL(res.headers.location, url);
      } catch {
        throw new OutboundError('bad_url', `redirect to an invalid URL: ${res.headers.location.slice(0, 200)}`, { chain });
      }
      if (next.protocol !== 'http:' && next.protocol !== 'https:')
        throw new OutboundError('blocked_address', `redirect to ${next.protocol} refused`, { chain });
      next = parseHttpUrl(next);
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
        headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !/^content-/i.test(k)));
      }
      if (next.origin !== url.origin)
        headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !/^(authorization|cookie)$/i.test(k)));
      url = next;
      continue;
    }
    return { url: url.href, status: res.status, headers: res.headers, body: res.body, chain, address: pinned.address };
  }
}

/** `base` with `more` put over it, names compared without case (HTTP's rule). */
function withHeaders(base: Record<string, string>, more: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  const over = new Set(Object.keys(more).map((k) => k.toLowerCase()));
  for (const [k, v] of Object.entries(base)) if (!over.has(k.toLowerCase())) out[k] = v;
  for (const [k, v] of Object.entries(more)) out[k.toLowerCase()] = v;
  return out;
}

interface OnceOptions extends GuardedFetchOptions {
  method: NonNullable<GuardedFetchOptions['method']>;
  headers: Record<string, string>;
}

function requestOnce(
  url: URL,
  pinned: PinnedAddress,
  opts: OnceOptions,
  deadline: number,
  timeoutMs: number,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  const maxBytes = opts.maxBytes ?? 10 * 1024 * 1024;
  const decompress = opts.decompress ?? true;
  const mod = url.protocol === 'https:' ? https : http;
  const headers: Record<string, string> = {
    'user-agent': DEFAULT_USER_AGENT,
    accept: '*/*',
    ...(decompress ? { 'accept-encoding': 'gzip, deflate, br' } : {}),
    ...opts.headers,
  };
  if (opts.body !== undefined) headers['content-length'] = String(Buffer.byteLength(opts.body));
  return new Promise((resolve, reject) => {
    let done = false;
    const fail = (e: Error) => {
      if (done) return;
      done = true;
      clearTimeout(total);
      clearTimeout(connect);
      opts.signal?.removeEventListener('abort', onAbort);
      req.destroy();
      reject(e);
    };
    const req = mod.request({
      protocol: url.protocol,
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      method: opts.method,
      headers,
      agent: false,
      lookup: pinnedLookup(pinned) as never,
      ...(opts.ca ? { ca: opts.ca } : {}),
    });
    const total = setTimeout(
      () => fail(new OutboundError('timeout', `fetch took longer than ${timeoutMs} ms`, { url: url.href })),
      Math.max(1, deadline - Date.now()),
    );
    const connect = setTimeout(
      () =>
        fail(
          new OutboundError('unreachable', `${url.host} did not accept a connection in ${opts.connectTimeoutMs ?? 10000} ms`, {
            url: url.href,
          }),
        ),
      opts.connectTimeoutMs ?? 10000,
    );
    req.on('socket', (s) => s.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => clearTimeout(connect)));
    const onAbort = () => fail(new OutboundError('timeout', 'fetch aborted', { url: url.href }));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', (e: NodeJS.ErrnoException) => {
      const tls = /CERT|SSL|TLS|self.signed/i.test(`${e.code} ${e.message}`);
      fail(new OutboundError('unreachable', `${url.host}: ${tls ? 'TLS error: ' : ''}${e.code ?? e.message}`, { url: url.href }));
    });
    req.on('response', (res) => {
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes && opts.method !== 'HEAD') {
        return fail(
          new OutboundError('too_large', `the page is ${declared} bytes, more than the ${maxBytes} allowed`, { url: url.href, maxBytes }),
        );
      }
      const chunks: Buffer[] = [];
      let got = 0;
      res.on('data', (c: Buffer) => {
        got += c.length;
        if (got > maxBytes)
          return fail(new OutboundError('too_large', `the page is more than the ${maxBytes} bytes allowed`, { url: url.href, maxBytes }));
        chunks.push(c);
      });
      res.on('error', (e) => fail(new OutboundError('unreachable', `${url.host}: connection broke: ${e.message}`, { url: url.href })));
      res.on('aborted', () => fail(new OutboundError('unreachable', `${url.host}: connection broke while reading`, { url: url.href })));
      res.on('end', () => {
        if (done) return;
        const raw = Buffer.concat(chunks);
        const enc = decompress ? String(res.headers['content-encoding'] ?? '') : '';
        decode(raw, enc, maxBytes).then(
          (body) => {
            if (done) return;
            done = true;
            clearTimeout(total);
            clearTimeout(connect);
            opts.signal?.removeEventListener('abort', onAbort);
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
          },
          (e) => fail(e),
        );
      });
    });
    if (opts.body !== undefined) req.end(opts.body);
    else req.end();
  });
}

const gunzip = promisify(zlib.gunzip);
const brotli = promisify(zlib.brotliDecompress);
const inflate = promisify(zlib.inflate);
const inflateRaw = promisify(zlib.inflateRaw);

/** Undo content encodings (last applied first), never producing more than maxBytes. */
export async function decode(raw: Buffer, contentEncoding: string, maxBytes: number): Promise<Buffer> {
  const encs = contentEncoding
    .toLowerCase()
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s && s !== 'identity')
    .reverse();
  let buf = raw;
  const o = { maxOutputLength: maxBytes + 1 };
  try {
    for (const e of encs) {
      if (!buf.length) break;
      if (e === 'gzip' || e === 'x-gzip') buf = await gunzip(buf, o);
      else if (e === 'br') buf = await brotli(buf, o);
      // "deflate" is meant to be zlib-wrapped, but some servers send it raw
      else if (e === 'deflate') buf = await inflate(buf, o).catch(() => inflateRaw(buf, o));
      else throw new OutboundError('unreachable', `unsupported content encoding ${e}`);
    }
  } catch (e) {
    if (e instanceof OutboundError) throw e;
    if ((e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || /too large|maxOutputLength/i.test((e as Error).message)) {
      throw new OutboundError('too_large', `the page is more than the ${maxBytes} bytes allowed once decompressed`, { maxBytes });
    }
    throw new OutboundError('unreachable', `the body could not be decompressed (${(e as Error).message})`);
  }
  if (buf.length > maxBytes) throw new OutboundError('too_large', `the page is more than the ${maxBytes} bytes allowed`, { maxBytes });
  return buf;
}
