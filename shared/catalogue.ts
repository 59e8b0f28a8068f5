// Live service catalogues. Each running actor instance writes its entry under
// `<service>.<instanceId>` in the `catalogue` bucket and refreshes it; the bucket's max age makes
// the entry vanish when the instance dies, and stop() deletes it at once.
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { BUCKETS, catalogueKey, type ServiceName } from './names.ts';

export interface CatalogueEntry {
  service: ServiceName;
  instanceId: string;
  at: number;
  /** Service-specific catalogue (browsers, checks, outputs...). */
  catalogue: Record<string, unknown>;
}

const REFRESH_MS = 10_000;
/** How long a first read waits for the watch's initial values before listing the bucket instead. */
const LOAD_WAIT_MS = 5000;

export async function advertise(nc: NatsConnection, service: ServiceName, instanceId: string, catalogue: () => Record<string, unknown>) {
  const kv = await new Kvm(nc).open(BUCKETS.catalogue);
  const key = catalogueKey(service, instanceId);
  const write = () => kv.put(key, JSON.stringify({ service, instanceId, at: Date.now(), catalogue: catalogue() } satisfies CatalogueEntry));
  await write();
  const timer = setInterval(() => { write().catch(() => { /* reconnecting; next tick retries */ }); }, REFRESH_MS);
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
 * over 30 s. Expired entries get no notification (max age), so readers filter by `at` as before.
 *
 * A watch alone lags the writes by a moment, so an instance that advertised just before a request
 * could be missing from the answer. `sync()` closes that gap: it asks the stream for its last
 * sequence (a stream-info request, no consumer) and waits until the watch has delivered up to it,
 * so a read sees every write acknowledged before the read began.
 */
class CatalogueWatch {
  private entries = new Map<string, CatalogueEntry>();
  /** Every stream sequence up to this one has been applied (or was gone before the watch saw it). */
  private applied = 0;
  private waiters = new Set<{ seq: number; wake: () => void }>();
  /** Resolves once the watch has delivered the bucket's values as they were when it started. */
  readonly loaded: Promise<void>;
  isLoaded = false;
  readonly ended: Promise<void>;

  constructor(private readonly kv: KV) {
    let markLoaded!: () => void;
    this.loaded = new Promise<void>((r) => (markLoaded = r)).then(() => { this.isLoaded = true; });
    this.ended = (async () => {
      const before = (await kv.status()).streamInfo.state.last_seq;
      const w = await kv.watch();
      // an empty bucket delivers nothing; otherwise the initial values end with delta 0. Either way
      // every sequence up to `before` has then been delivered or had expired.
      if ((await kv.status()).values === 0) {
        this.advance(before);
        markLoaded();
      }
      for await (const e of w) {
        if (e.operation === 'PUT' && e.value.length) {
          try {
            this.entries.set(e.key, e.json<CatalogueEntry>());
          } catch { /* not an entry: ignored */ }
        } else this.entries.delete(e.key);
        if (e.delta === 0) {
          this.advance(Math.max(e.revision, before));
          markLoaded();
        } else this.advance(e.revision);
      }
    })().finally(() => {
      this.advance(Infinity);
      markLoaded();
    });
  }

  private advance(seq: number) {
    if (seq <= this.applied) return;
    this.applied = seq;
    for (const w of this.waiters) if (w.seq <= seq) { this.waiters.delete(w); w.wake(); }
  }

  /**
   * Wait until the watch has applied every write the stream holds now. Once loaded, every later
   * write reaches the watch live, so only a lagging server makes this wait: at most `maxWaitMs`,
   * then the read answers from what has arrived.
   */
  async sync(maxWaitMs = 2000): Promise<void> {
    const last = (await this.kv.status()).streamInfo.state.last_seq;
    if (last <= this.applied) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => { this.waiters.delete(waiter); resolve(); }, maxWaitMs);
      const waiter = { seq: last, wake: () => { clearTimeout(timer); resolve(); } };
      this.waiters.add(waiter);
    });
  }

  live(service: ServiceName, now = Date.now()): CatalogueEntry[] {
    const out: CatalogueEntry[] = [];
    for (const [key, entry] of this.entries) {
      if (now - entry.at >= 3 * REFRESH_MS) {
        if (now - entry.at > 10 * REFRESH_MS) this.entries.delete(key); // long gone: forget it
        continue;
      }
      if (entry.service === service) out.push(entry);
    }
    return out.sort((a, b) => a.instanceId.localeCompare(b.instanceId));
  }
}

const watches = new WeakMap<KV, CatalogueWatch>();

/**
 * Every live entry of a service, from this process's watch of the bucket (started on first use).
 * The answer includes every advertisement acknowledged before the call (see `sync`).
 */
export async function readCatalogue(kv: KV, service: ServiceName): Promise<CatalogueEntry[]> {
  let w = watches.get(kv);
  if (!w) {
    const fresh = new CatalogueWatch(kv);
    watches.set(kv, fresh);
    // the watch ends with the connection (or an error): the next read starts a new one
    void fresh.ended.catch(() => {}).finally(() => { if (watches.get(kv) === fresh) watches.delete(kv); });
    w = fresh;
  }
  // the first read waits for the watch to load; a server too busy to start it in time gets listed
  if (!w.isLoaded) {
    const loaded = await Promise.race([w.loaded.then(() => true), new Promise<false>((r) => setTimeout(r, LOAD_WAIT_MS, false).unref())]);
    if (!loaded) return listCatalogue(kv, service);
  }
  await w.sync();
  return w.live(service);
}

/** Every live entry of a service, listed from the bucket itself (a consumer per call: slow). */
async function listCatalogue(kv: KV, service: ServiceName): Promise<CatalogueEntry[]> {
  const out: CatalogueEntry[] = [];
  const keys = await kv.keys(`${service}.>`);
  for await (const k of keys) {
    const e = await kv.get(k);
    if (!e || e.operation !== 'PUT' || !e.value.length) continue;
    const entry = e.json<CatalogueEntry>();
    if (Date.now() - entry.at < 3 * REFRESH_MS) out.push(entry);
  }
  return out.sort((a, b) => a.instanceId.localeCompare(b.instanceId));
}
