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

/** Every live entry of a service (entries older than the bucket age are already gone). */
export async function readCatalogue(kv: KV, service: ServiceName): Promise<CatalogueEntry[]> {
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
