// Fanning a job out into tasks: used by the gateway at creation (the tasks go out before the job
// document is written, and the document is written once, already dispatched) and by the
// supervisor's dispatch, the backstop for a job written `queued` (its tasks could not be published
// at creation). The task's message id makes a repeat from either side a no-op.
import type { JetStreamClient } from '@nats-io/jetstream';
import { SERVICE_MODULES } from '../services/index.ts';
import { objectName, taskMsgId, type JobRecord, type ResultRecord, type Task } from '../protocol/jobs.ts';
import { markAdmitted, publishPages, waitingPages } from './pages.ts';

/** Results whose task goes out when the job starts (a result made from others waits for them). */
export const isRootTask = (r: ResultRecord) => r.status === 'pending' && !!r.subject && !r.after;

export function taskOf(
  job: Pick<JobRecord, 'id' | 'service' | 'walletId' | 'expiresAt'>,
  r: ResultRecord,
  params: Record<string, unknown> = r.params ?? {},
): Task {
  return {
    v: 1,
    jobId: job.id,
    service: job.service,
    resultKey: r.key,
    walletId: job.walletId,
    store: SERVICE_MODULES[job.service].store,
    objectName: objectName(job.id, r.key),
    expiresAt: job.expiresAt,
    params,
  };
}

/**
 * Publish the task of every root result; the stream sequence of each one stored now (a duplicate,
 * from an earlier try, has none to report).
 */
export async function publishRootTasks(js: JetStreamClient, job: JobRecord, timeoutMs?: number): Promise<Map<string, number>> {
  const seqs = new Map<string, number>();
  // a page set: its first window of pages (the supervisor admits the others as pages are recorded)
  if (job.pageSet) {
    await publishPages(js, job, waitingPages(job, job.pageSet.window), timeoutMs);
    return seqs;
  }
  // independent writes: sent together, a job with several results waits for one round, not several
  await Promise.all(
    job.results.filter(isRootTask).map(async (r) => {
      const ack = await js.publish(r.subject!, JSON.stringify(taskOf(job, r)), {
        msgID: taskMsgId(job.id, r.key),
        ...(timeoutMs ? { timeout: timeoutMs } : {}),
      });
      if (!ack.duplicate) seqs.set(r.key, ack.seq);
    }),
  );
  return seqs;
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
