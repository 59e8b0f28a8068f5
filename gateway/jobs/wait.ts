// Long polling: hold until a job is finished, the time is up or the client goes away. Watches the
// job's key in the `jobs` bucket, so it wakes on the supervisor's write, on any gateway instance.
// The gateway's routes share one watch of the bucket instead (watch.ts); this one-watch-per-poll
// form serves callers without a gateway (tests, tools).
import { sleep } from '../../shared/runtime.ts';
import type { KV } from '@nats-io/kv';
import { isFinished, type JobRecord } from '../../shared/protocol/jobs.ts';
import { readJob } from '../../shared/jobs/store.ts';

/** How often a long poll without a watch reads the job. */
const POLL_MS = 500;

/**
 * Returns the newest record seen (`current` if nothing newer arrived). Resolves early when the
 * job is finished; never throws: a job creation that waits has charged already, so a failing
 * watch must not turn its answer into an error (the client would create the job again).
 */
export async function waitForJob(kv: KV, current: JobRecord, waitMs: number, signal?: AbortSignal): Promise<JobRecord> {
  if (isFinished(current) || waitMs <= 0 || signal?.aborted) return current;
  let latest = current;
  const deadline = Date.now() + waitMs;
  let w: Awaited<ReturnType<KV['watch']>>;
  try {
    w = await kv.watch({ key: current.id });
  } catch {
    // no watch now (a failover: its consumer could not be made): read the job now and then instead
    return pollJob(kv, current, deadline, signal);
  }
  const stop = () => w.stop();
  const timer = setTimeout(stop, Math.max(0, deadline - Date.now()));
  signal?.addEventListener('abort', stop, { once: true });
  if (signal?.aborted) stop(); // went away while the watch was being made
  let broken = false;
  try {
    for await (const e of w) {
      if (e.operation !== 'PUT' || !e.value.length) continue;
      latest = e.json<JobRecord>();
      if (isFinished(latest)) break;
    }
  } catch {
    broken = true; // its consumer lost in a failover: reads take over below
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', stop);
    w.stop();
  }
  if (isFinished(latest)) return latest;
  // a watch that ended early (broken, or closed under us) leaves the rest of the time to reads
  if (broken || Date.now() < deadline - POLL_MS) return pollJob(kv, latest, deadline, signal);
  // a write between the caller's read and the watch start is in the watch's first value; this
  // last read covers a watcher that was stopped before it delivered anything
  const again = await readJob(kv, current.id).catch(() => null);
  return again ? again.job : latest;
}

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
