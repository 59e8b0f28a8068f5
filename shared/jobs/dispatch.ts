// Fanning a job out into tasks: used by the gateway at creation (the tasks go out before the job
// document is written, and the document is written once, already dispatched) and by the
// supervisor's dispatch, the backstop for a job written `queued` (its tasks could not be published
// at creation). The task's message id makes a repeat from either side a no-op. Tasks past the
// wallet's share are held (shared/jobs/share.ts) and published later by the supervisor.
import { taskParams } from '../services/index.ts';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { Config } from '../config/index.ts';
import { publishShared, type SharedPublish, type WalletTasks } from './share.ts';
import { taskOf } from './task.ts';
import type { JobRecord, ResultRecord } from '../protocol/jobs.ts';

export { taskOf };
import { markAdmitted, publishPages, waitingPages } from './pages.ts';

/** Results whose task goes out when the job starts (a result made from others waits for them). */
export const isRootTask = (r: ResultRecord) => r.status === 'pending' && !!r.subject && !r.after;

/**
 * Publish the task of every root result through the wallet's share (shared/jobs/share.ts): those
 * within it go to workers, the rest are held until the wallet's own tasks finish. The stream
 * sequence of each one (a repeat of an earlier try: the first one's, for a task not held).
 */
export async function publishRootTasks(
  js: JetStreamClient,
  jsm: JetStreamManager,
  config: Config,
  job: JobRecord,
  timeoutMs?: number,
  counts?: WalletTasks,
): Promise<SharedPublish> {
  // a page set: its first pages (the supervisor admits the others as pages are recorded)
  if (job.pageSet) {
    await publishPages(js, job, waitingPages(job, job.pageSet.window), timeoutMs);
    return { taken: new Map(), held: new Map() };
  }
  const tasks = job.results.filter(isRootTask).map((r) => ({ kind: r.subject!, task: taskOf(job, r, taskParams(r)) }));
  return publishShared(js, jsm, config, job.walletId, tasks, { timeoutMs, counts });
}

/** The record's change from queued to processing once its root tasks are out (false: not queued). */
export function markDispatched(j: JobRecord, seqs: Map<string, number>, now = Date.now()): boolean {
  if (j.status !== 'queued') return false;
  j.status = 'processing';
  j.startedAt = now;
  if (j.pageSet) markAdmitted(j, waitingPages(j, j.pageSet.window));
  for (const r of j.results) {
    if (r.status !== 'pending') continue;
    if (!r.subject) r.status = 'done';
    else if (seqs.has(r.key)) r.taskSeq = seqs.get(r.key);
  }
  return true;
}
