// Live service catalogues. Each running actor instance writes its entry under
// `<service>.<instanceId>` in the `catalogue` bucket and refreshes it; the bucket's max age makes
// the entry vanish when the instance dies, and stop() deletes it at once.
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { BUCKETS, catalogueKey, type ServiceName } from './names.ts';
import { KvMirror } from './nats/kv-mirror.ts';
import { withRetry } from './runtime.ts';

export interface CatalogueEntry {
  service: ServiceName;
  instanceId: string;
  at: number;
  /** Service-specific catalogue (browsers, checks, outputs...). */
  catalogue: Record<string, unknown>;
}

const REFRESH_MS = 10_000;
/** An entry not refreshed for three rounds belongs to an instance that is gone. */
export const isLive = (entry: CatalogueEntry, now = Date.now()) => now - entry.at < 3 * REFRESH_MS;
/** How long a first read waits for the watch's initial values before listing the bucket instead. */
const LOAD_WAIT_MS = 5000;

export async function advertise(nc: NatsConnection, service: ServiceName, instanceId: string, catalogue: () => Record<string, unknown>) {
  // at start, right after a cluster (re)start, the bucket may answer "temporarily unavailable" a while
  const kv = await withRetry('catalogue bucket', () => new Kvm(nc).open(BUCKETS.catalogue));
  const key = catalogueKey(service, instanceId);
  const write = () => kv.put(key, JSON.stringify({ service, instanceId, at: Date.now(), catalogue: catalogue() } satisfies CatalogueEntry));
  await withRetry('advertising', write);
  const timer = setInterval(() => {
    write().catch(() => {
      /* reconnecting; next tick retries */
    });
  }, REFRESH_MS);
  timer.unref();
  return {
    refresh: write,
    async stop() {
      clearInterval(timer);
      await kv.delete(key).catch(() => {});
    },
  };
}

/**
 * One process's live copy of the `catalogue` bucket, kept by a single KV watch. Reading the bucket
 * per request (a `keys()` listing is a new consumer on the server each time) cost a JetStream API
 * round trip per quote and job creation, and under load one such listing stalled a job creation for
 * over 30 s. Each read first syncs the copy with the stream (shared/nats/kv-mirror.ts), so it sees
 * every advertisement acknowledged before it. Expired entries get no notification (max age), so
 * readers filter by `at`.
 */
class CatalogueCopy {
  private entries = new Map<string, CatalogueEntry>();
  readonly mirror: KvMirror;
  /** Told after every change the watch delivers (followCatalogue). */
  readonly listeners = new Set<() => void>();

  constructor(kv: KV) {
    this.mirror = new KvMirror(kv, (e) => {
      if (e.operation === 'PUT' && e.value.length) {
        try {
          this.entries.set(e.key, e.json<CatalogueEntry>());
        } catch {
          /* not an entry: ignored */
        }
      } else this.entries.delete(e.key);
      for (const l of this.listeners) l();
    });
  }

  /** The live entries' keys, in one string: changes when an instance comes, goes or ages out. */
  liveKeys(now = Date.now()): string {
    const keys: string[] = [];
    for (const [key, entry] of this.entries) if (isLive(entry, now)) keys.push(key);
    return keys.sort().join(' ');
  }

  live(service: ServiceName, now = Date.now()): CatalogueEntry[] {
    const out: CatalogueEntry[] = [];
    for (const [key, entry] of this.entries) {
      if (!isLive(entry, now)) {
        if (now - entry.at > 10 * REFRESH_MS) this.entries.delete(key); // long gone: forget it
        continue;
      }
      if (entry.service === service) out.push(entry);
    }
    return out.sort((a, b) => a.instanceId.localeCompare(b.instanceId));
  }
}

const copies = new WeakMap<KV, CatalogueCopy>();

function copyOf(kv: KV): CatalogueCopy {
  let c = copies.get(kv);
  if (!c || !c.mirror.alive) {
    c = new CatalogueCopy(kv);
    copies.set(kv, c);
  }
  return c;
}

/** How often a follower looks for entries that aged out (an instance that died without deleting its entry). */
const AGE_CHECK_MS = 1000;

/**
 * Call `changed` whenever this process's copy of the bucket changes: after each change the watch
 * delivers (several in one tick count once), and within a second of an entry aging out (max age
 * sends no notification). What a precomputed answer built from the catalogue follows
 * (gateway: GET /v1/services); it then reads with readCatalogue. Returns the stop function.
 */
export function followCatalogue(kv: KV, changed: () => void): () => void {
  const c = copyOf(kv);
  let pending = false;
  const notify = () => {
    if (pending) return;
    pending = true;
    setImmediate(() => {
      pending = false;
      changed();
    });
  };
  let seen = c.liveKeys();
  const onChange = () => {
    seen = c.liveKeys();
    notify();
  };
  c.listeners.add(onChange);
  const timer = setInterval(() => {
    const now = c.liveKeys();
    if (now !== seen) {
      seen = now;
      notify();
    }
  }, AGE_CHECK_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    c.listeners.delete(onChange);
  };
}

/**
 * Every live entry of a service, from this process's copy of the bucket (started on first use).
 * The answer includes every advertisement acknowledged before the call. While the copy is loading
 * (at most 5 s) or after its connection closed, the bucket is listed instead.
 *
 * `enough`: the caller only needs the catalogue to offer something (a converter runs, the browsers
 * asked for are offered). When the copy as it is already says so, it is the answer without asking
 * the stream (no round trip); only an answer that falls short is confirmed as of now. An instance
 * that stopped a moment ago may then still be counted, as one that dies just after a read always
 * could: its tasks fail as worker_lost and are refunded. A refusal is never given from a stale copy.
 */
export async function readCatalogue(
  kv: KV,
  service: ServiceName,
  enough?: (entries: CatalogueEntry[]) => boolean,
): Promise<CatalogueEntry[]> {
  const c = copyOf(kv);
  const m = c.mirror;
  if (enough && m.isLoaded && m.alive) {
    const now = c.live(service);
    if (enough(now)) return now;
  }
  if (!m.isLoaded) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      m.loaded,
      m.ended,
      new Promise((r) => {
        timer = setTimeout(r, LOAD_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    if (!m.isLoaded) return listCatalogue(kv, service);
  }
  await m.sync();
  return m.alive ? c.live(service) : listCatalogue(kv, service);
}

/** Every live entry of a service, listed from the bucket itself (a consumer per call: slow). */
async function listCatalogue(kv: KV, service: ServiceName): Promise<CatalogueEntry[]> {
  const out: CatalogueEntry[] = [];
  const keys = await kv.keys(`${service}.>`);
  for await (const k of keys) {
    const e = await kv.get(k);
    if (!e || e.operation !== 'PUT' || !e.value.length) continue;
    const entry = e.json<CatalogueEntry>();
    if (isLive(entry)) out.push(entry);
  }
  return out.sort((a, b) => a.instanceId.localeCompare(b.instanceId));
}
