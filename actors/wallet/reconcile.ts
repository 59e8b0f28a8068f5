// Reconciliation with the Lightning node, the other record of money. The ledger can lose an
// acknowledged credit only through a failure we guard against (fsync before acknowledgement,
// docs/reliability.md "Durability"); this is the check that does not trust that guard:
//   - every invoice the node lists as paid whose top-up has no credit is credited, once, with the
//     top-up's own ref (`topup:<id>`, idempotent for ever, see ledger.ts), and the top-up marked paid;
//   - every credit whose invoice the node does not list as paid is reported, never taken back.
// Runs every wallet.lightning.reconcileSeconds in each wallet instance (two instances at once are
// harmless: the credit is decided atomically with its write) and on `npm run admin -- audit`.
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from '../../shared/log.ts';
import { BUCKETS } from '../../shared/names.ts';
import { ledgerRef, type ReconcileReport, type TopupRecord } from '../../shared/protocol/wallet.ts';
import { readBucket } from '../../shared/audit.ts';
import type { InvoiceBackend } from './lightning/index.ts';
import type { Ledger } from './ledger.ts';
import type { Topups } from './topups.ts';
import { creditTopup } from './money.ts';

export async function reconcile(o: { nc: NatsConnection; ledger: Ledger; topups: Topups; backend: InvoiceBackend; log: Logger }): Promise<ReconcileReport> {
  const { nc, ledger, topups, backend, log } = o;
  const paid = new Map<string, number | undefined>();
  for await (const inv of backend.listPaid()) paid.set(inv.paymentHash, inv.paidMsat);
  // read from the stream leader, as the audit does (shared/audit.ts): a key listing is a consumer,
  // which with a node down can wait for the dead peer with no time limit, and every later run of
  // this instance would wait on the same stuck one (so no ordered consumer either, which the audit
  // uses when every replica is current: a peer can go between the check and the read)
  const all = [...(await readBucket<TopupRecord>(nc, BUCKETS.topups, undefined, { consumer: false })).values()];
  const byHash = new Map(all.filter((t) => t.paymentHash).map((t) => [t.paymentHash, t]));
  const report: ReconcileReport = { backend: backend.name, paidInvoices: paid.size, topups: all.length, credited: [], unknownPaid: [], unpaidCredits: [] };

  for (const [hash, paidMsat] of paid) {
    const t = byHash.get(hash);
    if (!t) {
      report.unknownPaid.push({ paymentHash: hash, ...(paidMsat !== undefined ? { paidMsat } : {}) });
      continue;
    }
    await ledger.synced(t.walletId);
    if (ledger.projection.byRef(t.walletId, ledgerRef.topup(t.id))) continue;
    // the same idempotent credit as settlement: `duplicate` when the normal path got there first
    const r = await creditTopup(ledger, t.walletId, t.id, t.payloads, t.bonusPayloads);
    // a document not yet `paid` is moved on by settlement itself (it finds the credit made)
    if (t.status !== 'paid') await topups.settle(t.id);
    if (r.duplicate) continue;
    report.credited.push({ topupId: t.id, walletId: t.walletId, payloads: t.payloads, paymentHash: hash });
    log.warn({ topupId: t.id, walletId: t.walletId, payloads: t.payloads, status: t.status }, 'reconcile: a paid invoice had no credit in the ledger; credited');
  }

  const topupById = new Map(all.map((t) => [t.id, t]));
  for (const c of ledger.projection.topupCredits()) {
    const t = c.topupId ? topupById.get(c.topupId) : undefined;
    if (t && paid.has(t.paymentHash)) continue;
    report.unpaidCredits.push({ topupId: c.topupId ?? '', walletId: c.walletId, entryId: c.id, payloads: c.amount, paymentHash: t?.paymentHash ?? null });
  }
  if (report.unpaidCredits.length) log.error({ unpaidCredits: report.unpaidCredits.slice(0, 20), count: report.unpaidCredits.length }, 'reconcile: credits whose invoice the node does not list as paid');
  return report;
}

/** The periodic task: one run at a time in this instance; `run()` also answers the wallet.reconcile endpoint. */
export function startReconciler(o: { nc: NatsConnection; ledger: Ledger; topups: Topups; everyMs: number; log: Logger }) {
  let running: Promise<ReconcileReport> | null = null;
  const run = (): Promise<ReconcileReport> => {
    running ??= reconcile({ nc: o.nc, ledger: o.ledger, topups: o.topups, backend: o.topups.backend, log: o.log })
      .finally(() => { running = null; });
    return running;
  };
  const timer = setInterval(() => {
    run().catch((e) => o.log.warn({ err: (e as Error).message }, 'reconcile failed; retrying next time'));
  }, o.everyMs);
  timer.unref();
  return {
    run,
    async stop() {
      clearInterval(timer);
      await running?.catch(() => {});
    },
  };
}
