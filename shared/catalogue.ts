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
 */
class CatalogueWatch {
  private entries = new Map<string, CatalogueEntry>();
  readonly ready: Promise<void>;
  readonly ended: Promise<void>;

  constructor(kv: KV) {
    let markReady!: () => void;
    this.ready = new Promise<void>((r) => (markReady = r));
    this.ended = (async () => {
      if ((await kv.status()).values === 0) markReady();
      const w = await kv.watch();
      // entries may expire between the count and the watch: never wait long for the initial values
      setTimeout(markReady, 3000).unref();
      for await (const e of w) {
        if (e.operation === 'PUT' && e.value.length) {
          try {
            this.entries.set(e.key, e.json<CatalogueEntry>());
          } catch { /* not an entry: ignored */ }
        } else this.entries.delete(e.key);
        if (e.isUpdate || e.delta === 0) markReady();
      }
    })().finally(markReady);
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

/** Every live entry of a service, from this process's watch of the bucket (started on first use). */
export async function readCatalogue(kv: KV, service: ServiceName): Promise<CatalogueEntry[]> {
  let w = watches.get(kv);
  if (!w) {
    const fresh = new CatalogueWatch(kv);
    watches.set(kv, fresh);
    // the watch ends with the connection (or an error): the next read starts a new one
    void fresh.ended.catch(() => {}).finally(() => { if (watches.get(kv) === fresh) watches.delete(kv); });
    w = fresh;
  }
  await w.ready;
  const live = w.live(service);
  // none known: perhaps an instance advertised a moment ago and the watch has not delivered it yet;
  // this path only runs when the answer would otherwise be "no instance", so it may be slow
  return live.length ? live : listCatalogue(kv, service);
}

/** Every live entry of a service, listed from the bucket itself. */
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
