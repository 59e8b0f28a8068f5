// A job document written after its orphan refund (issue 28 item 3). The gateway writes a job within
// half the orphan grace of its charge or not at all, but a write that timed out can still land later
// (a stalled server). If the wallet's orphan sweep looked before it landed, the whole charge was given
// back as `refund:<jobId>:_orphan`: the job is unpaid, and every refund its settle asks for is refused
// as more than was charged. Such a job ends at once as failed: its tasks are taken back (no work), its
// results are failed and marked refunded (the orphan refund gave back all of them, nothing is refunded
// twice), and an error line tells operators. `admin audit` checks it (shared/audit-refunds.ts).
import { STREAMS } from '../../shared/names.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { isFinished } from '../../shared/protocol/jobs.ts';
import { readJob, updateJob, publishJobEvent } from '../../shared/jobs/store.ts';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from '../../shared/log.ts';

/** What ending an orphaned job needs of the supervisor's steps (steps.ts Deps). */
interface Deps {
  nc: NatsConnection;
  jsm: JetStreamManager;
  jobs: KV;
  log: Logger;
}

/** Whether the job's charge was refunded whole as an orphan; if so the job is ended. */
export async function endIfOrphaned(d: Deps, jobId: string): Promise<boolean> {
  const cur = (await readJob(d.jobs, jobId))?.job;
  if (!cur || cur.orphaned) return !!cur?.orphaned;
  const ledger = await wallet.chargeOf(d.nc, cur.walletId, jobId);
  if (!ledger.orphaned) return false;
  for (const r of cur.results) {
    if (r.status === 'pending' && r.taskSeq) await d.jsm.streams.deleteMessage(STREAMS.tasks, r.taskSeq, false).catch(() => {});
  }
  const res = await updateJob(d.jobs, jobId, (j) => {
    if (j.orphaned) return false;
    j.orphaned = true;
    for (const r of j.results) {
      if (r.status !== 'failed') {
        r.status = 'failed';
        r.error = 'not_charged';
        r.message = 'the job was written after its charge had been refunded in full; nothing was done or charged';
        delete r.file;
        delete r.progress;
      }
      r.refunded = true;
    }
    j.refunded = j.cost;
    j.status = 'failed';
    j.error = 'not_charged';
    j.finishedAt ??= Date.now();
    if (j.webhook?.state === 'waiting') {
      j.webhook.state = 'pending';
      j.webhook.nextAt = j.finishedAt;
    }
    return true;
  });
  if (res?.changed) {
    d.log.error(
      { jobId, walletId: cur.walletId, cost: cur.cost, ledger, wasFinished: isFinished(cur) },
      'AUDIT: job document written after its charge was refunded as an orphan; ended as failed, nothing charged',
    );
    await publishJobEvent(d.nc, res.job, res.job.status);
  }
  return true;
}
