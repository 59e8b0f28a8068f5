// Long polling: hold until a job is finished, the time is up or the client goes away. Watches the
// job's key in the `jobs` bucket, so it wakes on the supervisor's write, on any gateway instance.
import type { KV } from '@nats-io/kv';
import { isFinished, type JobRecord } from '../protocol/jobs.ts';
import { readJob } from './store.ts';

/**
 * Returns the newest record seen (`current` if nothing newer arrived). Resolves early when the
 * job is finished; never throws for timeout or abort.
 */
export async function waitForJob(kv: KV, current: JobRecord, waitMs: number, signal?: AbortSignal): Promise<JobRecord> {
  if (isFinished(current) || waitMs <= 0 || signal?.aborted) return current;
  let latest = current;
  const w = await kv.watch({ key: current.id });
  const stop = () => w.stop();
  const timer = setTimeout(stop, waitMs);
  signal?.addEventListener('abort', stop, { once: true });
  try {
    for await (const e of w) {
      if (e.operation !== 'PUT' || !e.value.length) continue;
      latest = e.json<JobRecord>();
      if (isFinished(latest)) break;
    }
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', stop);
    w.stop();
  }
  // a write between the caller's read and the watch start is in the watch's first value; this
  // last read covers a watcher that was stopped before it delivered anything
  if (!isFinished(latest)) {
    const again = await readJob(kv, current.id).catch(() => null);
    if (again) latest = again.job;
  }
  return latest;
}
