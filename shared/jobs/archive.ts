// The archive of finished job documents (issue 26). A job whose results are deleted (purgedAt set),
// with no webhook to send and nothing left to refund, changes no more: the job-supervisor copies its
// document to the JOBS_ARCHIVE stream and deletes it from the `jobs` bucket by sequence. The bucket
// then holds only jobs within their result retention (traffic times retention, not history), and
// nats-server keeps no per-subject index for the archive (one subject). An archived document is
// read by its stream sequence, which every supervisor's projection learns by following the stream
// (actors/job-supervisor/projection.ts); readers that miss a job in the bucket ask a supervisor
// (`jobs.get`). The stream's age limit removes a document once its record retention is over.
import { headers } from '@nats-io/nats-core';
import { JetStreamApiError, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { STREAMS, subjects } from '../names.ts';
import { isFinished, isUnrefunded, type JobRecord } from '../protocol/jobs.ts';
import { decodeJob, encodeJob } from './store.ts';

/** A job nothing changes any more: finished, its files deleted, no webhook to send, no failed result to refund. */
export function isSettled(j: JobRecord): boolean {
  return isFinished(j) && j.purgedAt !== undefined && j.webhook?.state !== 'pending' && !j.results.some(isUnrefunded);
}

/** The `jobs` bucket revision the archived document had (0: it was written to the archive directly). */
export const REVISION_HEADER = 'Payloads-Revision';

/**
 * Store the document in the archive; resolves with its sequence. Idempotent per (job, revision)
 * within the stream's duplicate window: a retried archiving gets the first copy's sequence back.
 */
export async function archiveJob(js: JetStreamClient, job: JobRecord, revision: number, doc = encodeJob(job)): Promise<number> {
  const h = headers();
  h.set(REVISION_HEADER, String(revision));
  const ack = await js.publish(subjects.jobArchived, doc, { msgID: `${job.id}:${revision}`, headers: h });
  return ack.seq;
}

/** The archived document at `seq` if it is job `id`'s; null when the stream no longer holds it. */
export async function readArchived(jsm: JetStreamManager, seq: number, id: string): Promise<JobRecord | null> {
  try {
    const m = await jsm.streams.getMessage(STREAMS.jobsArchive, { seq });
    if (!m) return null;
    const job = decodeJob(m.data);
    return job?.id === id ? job : null;
  } catch (e) {
    if (e instanceof JetStreamApiError && e.code === 10037) return null; // aged out
    throw e;
  }
}

/** An archive message's revision header (0 when absent). */
export function archivedRevision(h: { get(k: string): string } | undefined): number {
  const v = Number(h?.get(REVISION_HEADER) ?? 0);
  return Number.isSafeInteger(v) && v > 0 ? v : 0;
}
