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
  private markLoaded!: () => void;
  /** Resolves once the watch has delivered the bucket's values as they were when it started. */
  readonly loaded = new Promise<void>((r) => (this.markLoaded = r)).then(() => { this.isLoaded = true; });
  isLoaded = false;
  /** False once the watch has ended (connection closed, an error, or stopped as stuck). */
  alive = true;
  private iterator?: { stop(): void };
  private slowSyncs = 0;
  readonly ended: Promise<void>;

  constructor(private readonly kv: KV) {
    this.ended = this.run().finally(() => {
      this.alive = false;
      for (const w of this.waiters) w.wake();
      this.waiters.clear();
    });
  }

  private async run() {
    const before = (await this.kv.status()).streamInfo.state.last_seq;
    const w = await this.kv.watch();
    this.iterator = w;
    try {
      if (!this.alive) return;
      // an empty bucket delivers nothing; otherwise the values the watch starts with arrive in stream
      // order and the last of them has delta 0. Once one at or past `before` (or one with delta 0)
      // has arrived, every sequence up to `before` has been delivered or had expired.
      if ((await this.kv.status()).values === 0) this.reach(before, true);
      for await (const e of w) {
        if (e.operation === 'PUT' && e.value.length) {
          try {
            this.entries.set(e.key, e.json<CatalogueEntry>());
          } catch { /* not an entry: ignored */ }
        } else this.entries.delete(e.key);
        const caughtUp = e.delta === 0 || e.revision >= before;
        this.reach(caughtUp ? Math.max(e.revision, before) : e.revision, caughtUp);
      }
    } finally {
      w.stop();
    }
  }

  private reach(seq: number, loaded: boolean) {
    if (loaded) this.markLoaded();
    if (seq <= this.applied) return;
    this.applied = seq;
    for (const w of this.waiters) if (w.seq <= seq) { this.waiters.delete(w); w.wake(); }
  }

  stop() {
    this.alive = false;
    this.iterator?.stop();
  }

  /**
   * Wait until the watch has applied every write the stream holds now; false if that took over
   * `maxWaitMs` (the read then answers from what has arrived). Once loaded, every later write
   * reaches the watch live, so only a lagging server or a watch that lost its consumer (it resets
   * only after missed heartbeats, about a minute) makes this wait: after two slow syncs in a row the
   * watch is stopped, and the next read starts a fresh one.
   */
  async sync(maxWaitMs = 2000): Promise<boolean> {
    const timeout = <T>(p: Promise<T>, ms: number) => {
      let timer: NodeJS.Timeout | undefined;
      return Promise.race([p, new Promise<'timeout'>((r) => { timer = setTimeout(r, Math.max(0, ms), 'timeout'); })]).finally(() => clearTimeout(timer));
    };
    const deadline = Date.now() + maxWaitMs;
    let synced = false;
    const status = await timeout(this.kv.status(), maxWaitMs).catch(() => 'timeout' as const);
    if (status !== 'timeout') {
      const { last_seq: last, messages } = status.streamInfo.state;
      // nothing stored (all expired): no message is left to wait for
      if (messages === 0) this.reach(last, false);
      synced = last <= this.applied || !this.alive;
      if (!synced) {
        let waiter!: { seq: number; wake: () => void };
        const reached = new Promise<true>((r) => { waiter = { seq: last, wake: () => r(true) }; });
        this.waiters.add(waiter);
        synced = (await timeout(reached, deadline - Date.now())) === true;
        this.waiters.delete(waiter);
      }
    }
    this.slowSyncs = synced ? 0 : this.slowSyncs + 1;
    if (this.slowSyncs >= 2) this.stop();
    return synced;
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
 * The answer includes every advertisement acknowledged before the call (see `sync`). While the
 * watch is starting (at most 5 s) or after it ended, the bucket is listed instead.
 */
export async function readCatalogue(kv: KV, service: ServiceName): Promise<CatalogueEntry[]> {
  let w = watches.get(kv);
  if (!w || !w.alive) {
    const fresh = new CatalogueWatch(kv);
    watches.set(kv, fresh);
    // the watch ends with the connection (or an error): the next read starts a new one
    void fresh.ended.catch(() => {}).finally(() => { if (watches.get(kv) === fresh) watches.delete(kv); });
    w = fresh;
  }
  if (!w.isLoaded) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([w.loaded, w.ended.catch(() => {}), new Promise((r) => { timer = setTimeout(r, LOAD_WAIT_MS); })]);
    clearTimeout(timer);
    if (!w.isLoaded || !w.alive) return listCatalogue(kv, service);
  }
  await w.sync();
  return w.alive ? w.live(service) : listCatalogue(kv, service);
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
