// Charges whose job never came to be. The gateway charges, then writes the job document; if the
// wallet's answer is lost (the wallet died after writing, a timeout), the gateway answers 503
// ("nothing charged") without knowing whether the charge happened. This sweep makes that true:
// a charge with no job document `orphanChargeGraceSeconds` after it was made is refunded in full,
// once (ref `refund:<jobId>:_orphan`). The gateway never writes a job document later than half
// that grace after it asked for the charge (gateway/jobs/create.ts), so the two cannot cross.
import type { KV } from '@nats-io/kv';
import type { Logger } from '../../shared/log.ts';
import type { Ledger } from './ledger.ts';
import type { Projection } from './projection.ts';
import { refund } from './money.ts';
import { failpoint } from '../../shared/failpoints.ts';

import { ORPHAN_RESULT_KEY } from '../../shared/audit-refunds.ts';

export { ORPHAN_RESULT_KEY };

export function startOrphanSweep(opts: { ledger: Ledger; projection: Projection; jobs: KV; graceMs: number; log: Logger; everyMs?: number; keptMs?: number }) {
  const { ledger, projection, jobs, graceMs, log } = opts;
  // every charge up to this id has been looked at; kept in the projection's file (issue 26), so a
  // restart goes on from it instead of reading one job document per charge ever made. A rebuilt
  // projection (another store) starts it at 0 again.
  let running: Promise<void> | null = null;

  async function sweep() {
    let cursor = projection.orphanCursor();
    for (;;) {
      // only up to the projection's checkpoint: above it an earlier charge may still be missing
      const batch = projection.chargesAfter(cursor, ledger.appliedUpTo);
      if (!batch.length) return;
      const oldEnough = Date.now() - graceMs;
      for (const c of batch) {
        // `at` is read before the write, so ids and times may disagree between writers: stop at the
        // first charge still inside its grace rather than skip it, and look again next time.
        if (c.at > oldEnough) return;
        // older than the least time a job's document is kept (shared/jobs/retention.ts): a missing
        // document was deleted by the job-record retention, not never written
        if (opts.keptMs !== undefined && c.at < Date.now() - opts.keptMs) { cursor = c.id; continue; }
        const doc = await jobs.get(c.jobId!);
        if (!doc || doc.operation !== 'PUT') {
          const rows = projection.forJob(c.walletId, c.jobId!);
          const refunded = rows.filter((r) => r.type === 'refund').reduce((s, r) => s + r.amount, 0);
          const owed = -c.amount - refunded;
          if (owed > 0) {
            await refund(ledger, c.walletId, c.jobId, ORPHAN_RESULT_KEY, owed);
            failpoint('wallet.after-orphan-refund');
            log.warn({ jobId: c.jobId, walletId: c.walletId, amount: owed }, 'refunded a charge whose job was never created');
          }
        }
        cursor = c.id;
        projection.setOrphanCursor(cursor);
      }
    }
  }

  const tick = () => {
    running ??= sweep().catch((e) => log.warn({ err: (e as Error).message }, 'orphan sweep failed; retrying next time')).finally(() => { running = null; });
  };
  const timer = setInterval(tick, opts.everyMs ?? Math.max(1000, Math.min(30_000, graceMs / 4)));
  timer.unref();
  return {
    tick,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
