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
import { readAll } from '../../shared/audit-read.ts';

import { ORPHAN_RESULT_KEY } from '../../shared/audit-refunds.ts';

export { ORPHAN_RESULT_KEY };

export function startOrphanSweep(opts: {
  ledger: Ledger;
  projection: Projection;
  jobs: KV;
  graceMs: number;
  log: Logger;
  everyMs?: number;
  keptMs?: number;
}) {
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
      // `at` is read before the write, so ids and times may disagree between writers: stop at the
      // first charge still inside its grace rather than skip it, and look again next time.
      const oldEnough = Date.now() - graceMs;
      const firstYoung = batch.findIndex((c) => c.at > oldEnough);
      const due = firstYoung < 0 ? batch : batch.slice(0, firstYoung);
      if (!due.length) return;
      // older than the least time a job's document is surely in the bucket (shared/jobs/retention.ts):
      // a missing document was archived or deleted, not never written; not read at all
      const readFrom = opts.keptMs === undefined ? -Infinity : Date.now() - opts.keptMs;
      // the documents are read READ_CONCURRENCY at a time, a passing outage retried, any other
      // failure stopping the batch (read one at a time, a store's first sweep over a history of
      // 1 M charges was still going after 50 minutes on the cluster); refunds go in id order
      const missing = await readAll(
        due,
        async (c) => {
          if (c.at < readFrom) return false;
          const doc = await jobs.get(c.jobId!);
          return !doc || doc.operation !== 'PUT';
        },
        Infinity,
        'job documents',
      );
      for (const [i, c] of due.entries()) {
        if (!missing[i]) continue;
        const rows = projection.forJob(c.walletId, c.jobId!);
        const refunded = rows.filter((r) => r.type === 'refund').reduce((s, r) => s + r.amount, 0);
        const owed = -c.amount - refunded;
        if (owed <= 0) continue;
        try {
          await refund(ledger, c.walletId, c.jobId, ORPHAN_RESULT_KEY, owed);
        } catch (e) {
          // every charge before this one is looked at: the next sweep starts here, not at the batch
          if (i > 0) projection.setOrphanCursor(due[i - 1]!.id);
          throw e;
        }
        failpoint('wallet.after-orphan-refund');
        log.warn({ jobId: c.jobId, walletId: c.walletId, amount: owed }, 'refunded a charge whose job was never created');
        // a crash after a refund starts after it (its ref keeps it from being paid twice anyway)
        projection.setOrphanCursor(c.id);
      }
      // once per batch otherwise (a write per charge was a SQLite write per charge ever made); a
      // crash before it looks at the batch again, which refunds nothing twice (the refund's ref)
      cursor = due.at(-1)!.id;
      projection.setOrphanCursor(cursor);
      if (due.length < batch.length) return;
    }
  }

  const tick = () => {
    running ??= sweep()
      .catch((e) => log.warn({ err: (e as Error).message }, 'orphan sweep failed; retrying next time'))
      .finally(() => {
        running = null;
      });
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
