// The sweep's two retention steps for finished jobs (called by index.ts's sweep): archive the
// settled ones (their documents leave the `jobs` bucket for JOBS_ARCHIVE) and forget the ones past
// retention.jobRecords. Each works from this instance's projection's due lists.
import { BUCKETS } from '../../shared/names.ts';
import { readJob } from '../../shared/jobs/store.ts';
import { archiveJob, isSettled } from '../../shared/jobs/archive.ts';
import type { JobProjection } from './projection.ts';
import type { Deps } from './deps.ts';

/** Documents moved to the archive at once (each: a read, a publish, a delete by sequence). */
const ARCHIVE_PARALLEL = 16;

/** What the two steps need of the supervisor; `stopping()` ends them early when it stops. */
export interface Retiring {
  d: Deps;
  projection: JobProjection;
  log: { warn(o: object, msg: string): void };
  stopping: () => boolean;
}

/**
 * Finished jobs whose files are deleted, with no webhook to send and nothing to refund, change no
 * more: each document is copied to the archive, then its message is deleted from the bucket by
 * sequence (shared/jobs/archive.ts). A write that came in between keeps the document in the bucket
 * (the delete finds no message at that sequence; the old copy in the archive is never pointed at)
 * and it is due again. Every instance works from its own due list; the archive's duplicate window
 * makes two instances archiving the same revision store it once. At most 20 rounds of 500 a sweep,
 * ARCHIVE_PARALLEL at a time (a store written before the archive moves its documents at that pace).
 */
export async function archiveSettledJobs({ d, projection, log, stopping }: Retiring, now: number): Promise<void> {
  const one = async (id: string): Promise<boolean> => {
    const cur = await readJob(d.jobs, id);
    if (!cur) {
      // archived a moment ago by another instance (its copy is on the way), or gone: off the list
      // (not known yet while this copy reads the archive: left for a later sweep)
      if ((await projection.archivedAt(id).catch(() => undefined)) === null) projection.notArchivable(id);
      return false;
    }
    if (!isSettled(cur.job)) {
      projection.notArchivable(id);
      return false;
    }
    await archiveJob(d.js, cur.job, cur.revision);
    await d.jsm.streams.deleteMessage(`KV_${BUCKETS.jobs}`, cur.revision, false).catch((e: Error) => {
      if (!/no message found|not found/i.test(e.message)) throw e;
    });
    return true;
  };
  for (let round = 0; round < 20 && !stopping(); round++) {
    const due = projection.archiveDue(now);
    let moved = 0;
    let failed: unknown;
    for (let i = 0; i < due.length && !stopping(); i += ARCHIVE_PARALLEL) {
      // one document that fails (a timeout on a loaded server) stays due and is tried next sweep;
      // the others go on (a copy stored without its delete: the retry's copy is the one pointed at)
      for (const r of await Promise.allSettled(due.slice(i, i + ARCHIVE_PARALLEL).map(one))) {
        if (r.status === 'fulfilled') moved += r.value ? 1 : 0;
        else failed ??= r.reason;
      }
    }
    if (failed !== undefined) log.warn({ err: failed }, 'sweep: archiving a finished job failed; it stays due');
    if (due.length < 500 || moved === 0) return;
  }
}
/**
 * Finished, purged jobs past retention.jobRecords leave the bucket: the message holding the
 * document is deleted by its sequence (a KV delete would leave a marker per job for ever; the
 * bucket keeps one revision, so the document's last write is its only message). A newer write the
 * projection has not seen survives and is due again once seen. Every instance does this from its
 * own due list; a document another instance deleted first is simply gone.
 */
export async function forgetOldJobs({ d, projection, stopping }: Retiring, now: number): Promise<void> {
  for (;;) {
    const due = projection.forgetDue(now);
    for (const { id, revision } of due) {
      // an archived document left the bucket already (its copy in the archive ages out: the stream's max age)
      if (revision > 0)
        await d.jsm.streams.deleteMessage(`KV_${BUCKETS.jobs}`, revision, false).catch((e: Error) => {
          if (!/no message found|not found/i.test(e.message)) throw e;
        });
      projection.forgotten(id, revision);
    }
    if (due.length < 500 || stopping()) return;
  }
}
