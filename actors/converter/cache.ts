// The fetch cache behind websitepro `maxAge` (docs/websitepro.md "Fresh or cached"):
//   const { res, cachedAt } = await cachedFetch(nc, config, url, fetchOptions, { maxAge, eligible })
// - eligible (no caller headers or cookies, no browser render asked for): a fetch answered with a
//   status under 400 is written to the `fetch_cache` KV bucket (every one, whatever `maxAge`, so a later
//   `maxAge` finds it); with `maxAge` > 0 an entry no older than that is served instead of a fetch,
//   and `cachedAt` says when it was fetched;
// - not eligible: a plain guardedFetch, the cache neither read nor written;
// - the key is the request URL (the fetch's options are the same for every eligible fetch); the value
//   is one message: the final URL, status, the headers conversion reads, the redirect chain and the
//   body (a body over websitepro.cacheEntryMaxBytes is not kept); the bucket's max bytes and age are
//   config (shared/nats/provision.ts);
// - an entry is served only if the guard would allow its address and size today (servable);
// - the cache is best effort: a bucket that cannot be read or written is a fetch, never a failure;
//   writes go on beside the conversion (at most WRITES_IN_FLIGHT at once), not before it.
import { createHash } from 'node:crypto';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { BUCKETS } from '../../shared/names.ts';
import { blockReason, guardedFetch, type GuardedFetchOptions, type GuardedResponse } from '../../shared/outbound/index.ts';
import type { Config } from '../../shared/config/index.ts';

/** Headers of the fetched response that conversion reads; the others are not kept. */
const KEPT_HEADERS = ['content-type', 'content-language', 'content-disposition', 'last-modified', 'etag'] as const;

type Meta = { v: 1; at: number; url: string; status: number; headers: Record<string, string>; chain: string[]; address: string };

export interface CacheUse {
  /** Seconds: an entry this old or younger is served (0: always fetch). */
  maxAge: number;
  /** False when the request sends headers or cookies or asks for a browser render: no read, no write. */
  eligible: boolean;
}
export interface CachedFetch {
  res: GuardedResponse;
  /** When the served entry was fetched (ISO); absent on a fresh fetch. */
  cachedAt?: string;
}

const buckets = new WeakMap<NatsConnection, Promise<KV>>();
function bucket(nc: NatsConnection): Promise<KV> {
  let kv = buckets.get(nc);
  if (!kv) {
    kv = new Kvm(nc).open(BUCKETS.fetchCache);
    buckets.set(nc, kv);
    kv.catch(() => buckets.delete(nc));
  }
  return kv;
}

/** The key of a request URL: a hash (KV keys allow few characters; URLs are long). */
export const cacheKey = (url: string) => `p.${createHash('sha256').update(url).digest('hex')}`;

export function encodeEntry(res: GuardedResponse, at: number): Uint8Array {
  const headers: Record<string, string> = {};
  for (const h of KEPT_HEADERS) {
    const v = res.headers[h];
    if (v !== undefined) headers[h] = Array.isArray(v) ? v.join(', ') : String(v);
  }
  const meta: Meta = { v: 1, at, url: res.url, status: res.status, headers, chain: res.chain, address: res.address };
  const head = Buffer.from(JSON.stringify(meta), 'utf8');
  const len = Buffer.alloc(4);
  len.writeUInt32BE(head.length);
  return Buffer.concat([len, head, res.body]);
}

export function decodeEntry(data: Uint8Array): { res: GuardedResponse; at: number } | null {
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (buf.length < 4) return null;
  const n = buf.readUInt32BE(0);
  if (4 + n > buf.length) return null;
  const meta = JSON.parse(buf.subarray(4, 4 + n).toString('utf8')) as Meta;
  if (meta.v !== 1) return null;
  const res: GuardedResponse = {
    url: meta.url,
    status: meta.status,
    headers: meta.headers,
    body: Buffer.from(buf.subarray(4 + n)),
    chain: meta.chain,
    address: meta.address,
  };
  return { res, at: meta.at };
}

/**
 * An entry is served only as the guard would let it through now: its address still allowed (a
 * narrowed `outbound.allowCidrs` is not bypassed by an older entry) and its body within the fetch's size cap.
 */
const servable = (res: GuardedResponse, opts: GuardedFetchOptions) =>
  blockReason(res.address, opts.allowCidrs) === null && res.body.length <= (opts.maxBytes ?? Number.POSITIVE_INFINITY);

/** The options of a websitepro target's fetch (one page or a page set's page): the guard, the bounds, what we accept. */
export const targetFetchOptions = (config: Pick<Config, 'outbound' | 'websitepro'>, signal: AbortSignal): GuardedFetchOptions => ({
  allowCidrs: config.outbound.allowCidrs,
  maxRedirects: config.outbound.maxRedirects,
  connectTimeoutMs: config.outbound.connectTimeoutMs,
  timeoutMs: config.websitepro.fetchTimeoutMs,
  maxBytes: config.websitepro.maxBytes,
  signal,
  headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'accept-language': 'en;q=0.9,*;q=0.5' },
});

/** guardedFetch through the cache (see the head of this file). */
export async function cachedFetch(
  nc: NatsConnection,
  config: Pick<Config, 'websitepro'>,
  url: string,
  opts: GuardedFetchOptions,
  use: CacheUse,
): Promise<CachedFetch> {
  if (!use.eligible) return { res: await guardedFetch(url, opts) };
  const key = cacheKey(url);
  if (use.maxAge > 0) {
    const hit = await bucket(nc)
      .then((kv) => kv.get(key))
      .then((e) => (e && e.operation === 'PUT' && e.length ? decodeEntry(e.value) : null))
      .catch(() => null);
    if (hit && Date.now() - hit.at <= use.maxAge * 1000 && servable(hit.res, opts))
      return { res: hit.res, cachedAt: new Date(hit.at).toISOString() };
  }
  const at = Date.now();
  const res = await guardedFetch(url, opts);
  // a page the site says must not be kept (Cache-Control: no-store or private) is not stored
  const control = String(res.headers['cache-control'] ?? '');
  if (
    res.status < 400 &&
    res.body.length <= config.websitepro.cacheEntryMaxBytes &&
    !/\b(no-store|private)\b/i.test(control) &&
    writing < WRITES_IN_FLIGHT
  ) {
    // off the page's path: the conversion does not wait for the write's fsync; bounded, so a slow
    // NATS costs skipped entries, not memory
    writing++;
    void bucket(nc)
      .then((kv) => kv.put(key, encodeEntry(res, at)))
      .catch(() => undefined)
      .finally(() => writing--);
  }
  return { res };
}

/** Cache writes under way at once in this process; a fetch beyond them is not kept. */
const WRITES_IN_FLIGHT = 16;
let writing = 0;

/** Resolves when this process's cache writes under way are done (tests; a stop). */
export async function cacheWritesSettled(): Promise<void> {
  while (writing > 0) await new Promise((r) => setTimeout(r, 10));
}
