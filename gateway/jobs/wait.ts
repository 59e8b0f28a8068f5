// Long polling without a watch: what a long poll falls back to while the gateway's shared watch of
// the `jobs` bucket (watch.ts) cannot be made or has broken (a failover).
import { sleep } from '../../shared/runtime.ts';
import type { KV } from '@nats-io/kv';
import { isFinished, type JobRecord } from '../../shared/protocol/jobs.ts';
import { readJob } from '../../shared/jobs/store.ts';

/** How often a long poll without a watch reads the job. */
const POLL_MS = 500;

/** Long polling without a watch: a read every POLL_MS until finished, the deadline or the abort. */
export async function pollJob(kv: KV, current: JobRecord, deadline: number, signal?: AbortSignal): Promise<JobRecord> {
  let latest = current;
  for (;;) {
    const again = await readJob(kv, current.id).catch(() => null);
    if (again) latest = again.job;
    if (isFinished(latest) || signal?.aborted || Date.now() >= deadline) return latest;
    await sleep(Math.min(POLL_MS, Math.max(0, deadline - Date.now())), signal).catch(() => {});
  }
}
