// The audit's checks of refunds that are due (issue 28), kept apart from shared/audit.ts, which
// calls them: a failed result is refunded when it fails, so on a quiet system none is left failed and
// not refunded; and a job written after its orphan refund is failed, refunded whole by that one entry.
import { isUnrefunded, type JobRecord } from './protocol/jobs.ts';
import type { LedgerMessage } from './protocol/wallet.ts';

/** The result key of the wallet's whole-charge refund of a charge whose job did not appear (actors/wallet/orphans.ts). */
export const ORPHAN_RESULT_KEY = '_orphan';

/** Every failed result not refunded, one line each. */
export function unrefundedResults(jobs: Iterable<JobRecord>): string[] {
  const v: string[] = [];
  for (const job of jobs) {
    for (const r of job?.results ?? [])
      if (isUnrefunded(r)) v.push(`job ${job.id}: result ${r.key} failed and not refunded (${job.status})`);
  }
  return v;
}

/**
 * A job marked `orphaned`: its charge given back by exactly one orphan refund of the whole cost,
 * no other refund, and the job failed with every result refunded (nothing charged twice, nothing kept).
 */
export function orphanedJobViolations(
  job: JobRecord,
  charges: Pick<LedgerMessage, 'amount'>[],
  refunds: (Pick<LedgerMessage, 'amount' | 'resultKey'> & { seq: number })[],
): string[] {
  const v: string[] = [];
  const orphan = refunds.filter((e) => e.resultKey === ORPHAN_RESULT_KEY);
  const charged = -charges.reduce((s, e) => s + e.amount, 0);
  if (charges.length !== 1 || charged !== job.cost)
    v.push(`job ${job.id} (orphaned): cost ${job.cost}, ${charges.length} charge entries of ${charged}`);
  if (orphan.length !== 1 || orphan[0]!.amount !== job.cost)
    v.push(`job ${job.id} (orphaned): not refunded whole by one orphan refund (${orphan.map((e) => e.amount).join(', ') || 'none'})`);
  for (const e of refunds)
    if (e.resultKey !== ORPHAN_RESULT_KEY) v.push(`job ${job.id} (orphaned): refunded again for result ${e.resultKey} (entry ${e.seq})`);
  if (job.status !== 'failed' || job.refunded !== job.cost || job.results.some((r) => r.status !== 'failed' || !r.refunded))
    v.push(`job ${job.id} (orphaned): not ended as failed with every result refunded`);
  return v;
}
