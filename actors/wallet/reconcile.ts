// Reconciliation with the Lightning node, the other record of money. The ledger can lose an
// acknowledged credit only through a failure we guard against (fsync before acknowledgement,
// docs/reliability.md "Durability"); this is the check that does not trust that guard:
//   - every invoice the node lists as paid whose top-up has no credit is credited, once, with the
//     top-up's own ref (`topup:<id>`, idempotent for ever, see ledger.ts), and the top-up marked paid;
//   - every credit whose invoice the node does not list as paid is reported, never taken back.
// Two ways, the same rules (two instances at once are harmless: the credit is decided atomically
// with its write):
//   - `reconcile`, everything: every invoice the node lists as paid and every top-up document.
//     What `npm run admin -- audit` asks for (the wallet.reconcile endpoint). Its cost grows with
//     the history, and the audit has a deadline.
//   - `reconcileRecent`, every wallet.lightning.reconcileSeconds in each wallet instance: the
//     top-ups on the work list the top-up watch keeps (topups-kept.ts), each asked of the node by
//     its payment hash (one leaves the list once the node's word on it is final and the ledger
//     agrees), and the next wallet.lightning.reconcileSweep documents of a rolling pass over all
//     top-ups. Its cost follows the top-ups made or changed since the last runs plus a fixed slice,
//     not the history (issue 26). A paid invoice with no top-up document at all is found by the
//     full run only.
import type { NatsConnection } from '@nats-io/nats-core';
import { jetstreamManager } from '@nats-io/jetstream';
import type { Logger } from '../../shared/log.ts';
import { BUCKETS } from '../../shared/names.ts';
import { ledgerRef, type ReconcileReport, type TopupRecord } from '../../shared/protocol/wallet.ts';
import { readBucket } from '../../shared/audit.ts';
import { READ_TIMEOUT_MS } from '../../shared/audit-read.ts';
import { LightningError, type InvoiceBackend } from './lightning/index.ts';
import type { Ledger } from './ledger.ts';
import type { Topups } from './topups.ts';
import { creditTopup } from './money.ts';

export async function reconcile(o: {
  nc: NatsConnection;
  ledger: Ledger;
  topups: Topups;
  backend: InvoiceBackend;
  log: Logger;
}): Promise<ReconcileReport> {
  const { nc, ledger, backend, log } = o;
  const paid = new Map<string, number | undefined>();
  for await (const inv of backend.listPaid()) paid.set(inv.paymentHash, inv.paidMsat);
  // read from the stream leader, as the audit does (shared/audit.ts): a key listing is a consumer,
  // which with a node down can wait for the dead peer with no time limit, and every later run of
  // this instance would wait on the same stuck one (so no ordered consumer either, which the audit
  // uses when every replica is current: a peer can go between the check and the read)
  const all = [...(await readBucket<TopupRecord>(nc, BUCKETS.topups, undefined, { consumer: false })).values()];
  const byHash = new Map(all.filter((t) => t.paymentHash).map((t) => [t.paymentHash, t]));
  const report: ReconcileReport = {
    backend: backend.name,
    paidInvoices: paid.size,
    topups: all.length,
    credited: [],
    unknownPaid: [],
    unpaidCredits: [],
  };

  for (const [hash, paidMsat] of paid) {
    const t = byHash.get(hash);
    if (!t) {
      report.unknownPaid.push({ paymentHash: hash, ...(paidMsat !== undefined ? { paidMsat } : {}) });
      continue;
    }
    await ledger.synced(t.walletId);
    await creditPaid(t, !!ledger.projection.byRef(t.walletId, ledgerRef.topup(t.id)), o, report);
  }

  const topupById = new Map(all.map((t) => [t.id, t]));
  for (const c of ledger.projection.topupCredits()) {
    const t = c.topupId ? topupById.get(c.topupId) : undefined;
    if (t && paid.has(t.paymentHash)) continue;
    report.unpaidCredits.push({
      topupId: c.topupId ?? '',
      walletId: c.walletId,
      entryId: c.id,
      payloads: c.amount,
      paymentHash: t?.paymentHash ?? null,
    });
  }
  return logged(report, log);
}

/**
 * A top-up whose invoice the node says is paid: credited if the ledger has no credit (the same
 * idempotent credit as settlement: `duplicate` when the normal path got there first), and the
 * document moved on to `paid` (settlement finds the credit made).
 */
async function creditPaid(
  t: TopupRecord,
  credited: boolean,
  o: { ledger: Ledger; topups: Topups; log: Logger },
  report: ReconcileReport,
): Promise<void> {
  if (!credited) {
    const r = await creditTopup(o.ledger, t.walletId, t.id, t.payloads, t.bonusPayloads);
    if (!r.duplicate) {
      report.credited.push({ topupId: t.id, walletId: t.walletId, payloads: t.payloads, paymentHash: t.paymentHash });
      o.log.warn(
        { topupId: t.id, walletId: t.walletId, payloads: t.payloads, status: t.status },
        'reconcile: a paid invoice had no credit in the ledger; credited',
      );
    }
  }
  if (t.status !== 'paid') await o.topups.settle(t.id);
}

/** The report, its credits without a paid invoice logged as errors. */
function logged(report: ReconcileReport, log: Logger): ReconcileReport {
  if (report.unpaidCredits.length)
    log.error(
      { unpaidCredits: report.unpaidCredits.slice(0, 20), count: report.unpaidCredits.length },
      'reconcile: credits whose invoice the node does not list as paid',
    );
  return report;
}

/** A node that no longer knows an invoice this long past its expiry: it can no longer be paid (as topups.ts judges it). */
const UNKNOWN_FINAL_MS = 60_000;

/**
 * The periodic reconciliation: the top-ups on the work list, then the next `sweep` documents of the
 * `topups` stream from where the last run's sweep stopped (a rolling pass over every top-up, so a
 * credit lost long after its top-up was final is still found, at a cost per run that does not grow
 * with the history), each asked of the node by its payment hash. The report's `paidInvoices` counts
 * those the node said were paid, `topups` those looked at.
 */
export async function reconcileRecent(o: {
  nc: NatsConnection;
  ledger: Ledger;
  topups: Topups;
  backend: InvoiceBackend;
  sweep: number;
  log: Logger;
}): Promise<ReconcileReport> {
  const { ledger, topups, backend, log } = o;
  const kept = topups.kept;
  const report: ReconcileReport = { backend: backend.name, paidInvoices: 0, topups: 0, credited: [], unknownPaid: [], unpaidCredits: [] };
  const listed = kept.unreconciled();
  for (const id of listed) {
    const t = await topups.record(id);
    // a document gone (deleted) has nothing left to reconcile
    if (!t || (await checkTopup(t, { ledger, topups, backend, log }, report)) !== 'open') kept.reconciled(id);
  }
  const onList = new Set(listed);
  const slice = await sweepSlice(o.nc, kept, o.sweep);
  for (const t of slice.docs) {
    if (!onList.has(t.id)) await checkTopup(t, { ledger, topups, backend, log }, report);
  }
  // moved on only once the slice is done: a run that failed half-way does its slice again
  kept.sweep(slice.next);
  return logged(report, log);
}

/**
 * One top-up asked of the node, under the full run's rules: 'final' when the node's word is final
 * and the ledger agrees, 'open' when it may still change (or a credit has no paid invoice: reported
 * at every run until somebody looks).
 */
async function checkTopup(
  t: TopupRecord,
  o: { ledger: Ledger; topups: Topups; backend: InvoiceBackend; log: Logger },
  report: ReconcileReport,
): Promise<'final' | 'open'> {
  const { ledger, backend } = o;
  report.topups++;
  let state: 'paid' | 'open' | 'final';
  try {
    const st = await backend.lookupInvoice(t.paymentHash);
    state = st.state === 'paid' ? 'paid' : st.state === 'open' ? 'open' : 'final';
  } catch (e) {
    // without the node's answer nothing is decided: the run stops, the next one asks again
    if (!(e instanceof LightningError && e.status === 404)) throw e;
    state = Date.now() > t.expiresAt + UNKNOWN_FINAL_MS ? 'final' : 'open';
  }
  await ledger.synced(t.walletId);
  const credit = ledger.projection.byRef(t.walletId, ledgerRef.topup(t.id));
  if (state === 'paid') {
    report.paidInvoices++;
    await creditPaid(t, !!credit, o, report);
    return 'final';
  }
  if (credit) {
    report.unpaidCredits.push({
      topupId: t.id,
      walletId: t.walletId,
      entryId: credit.id,
      payloads: credit.amount,
      paymentHash: t.paymentHash,
    });
    return 'open';
  }
  return state;
}

/**
 * The next `n` top-up documents of the `topups` stream from the kept position (leader gets, no
 * consumer: see `reconcile`), and the position to keep after them (0: past the stream's end, start
 * again from the first).
 */
async function sweepSlice(nc: NatsConnection, kept: Topups['kept'], n: number): Promise<{ docs: TopupRecord[]; next: number }> {
  if (n <= 0) return { docs: [], next: kept.sweptTo() };
  const stream = `KV_${BUCKETS.topups}`;
  const prefix = `$KV.${BUCKETS.topups}.`;
  const jsm = await jetstreamManager(nc, { timeout: READ_TIMEOUT_MS, checkAPI: false });
  const { state } = await jsm.streams.info(stream);
  if (!state.messages) return { docs: [], next: 0 };
  let seq = Math.max(kept.sweptTo() + 1, state.first_seq);
  if (seq > state.last_seq) seq = state.first_seq;
  const docs = new Map<string, TopupRecord>();
  while (docs.size < n && seq <= state.last_seq) {
    // the first message at or after `seq` (a bucket keeps one revision per key: most sequences are
    // gone); STREAM.MSG.GET takes `next_by_subj`, which the client's type for it leaves out
    const m = await jsm.streams.getMessage(stream, { seq, next_by_subj: `${prefix}>` } as unknown as { seq: number });
    if (!m) {
      seq = state.last_seq + 1;
      break;
    }
    seq = m.seq + 1;
    if (m.seq > state.last_seq) break;
    if (!m.header?.get('KV-Operation') && m.data.length) docs.set(m.subject.slice(prefix.length), m.json<TopupRecord>());
  }
  return { docs: [...docs.values()], next: seq > state.last_seq ? 0 : seq - 1 };
}

/**
 * The periodic task (`reconcileRecent`) and the full one (`run()`, the wallet.reconcile endpoint):
 * one run of each at a time in this instance.
 */
export function startReconciler(o: { nc: NatsConnection; ledger: Ledger; topups: Topups; everyMs: number; sweep: number; log: Logger }) {
  let running: Promise<ReconcileReport> | null = null;
  let recent: Promise<ReconcileReport> | null = null;
  const run = (): Promise<ReconcileReport> => {
    running ??= reconcile({ nc: o.nc, ledger: o.ledger, topups: o.topups, backend: o.topups.backend, log: o.log }).finally(() => {
      running = null;
    });
    return running;
  };
  const runRecent = (): Promise<ReconcileReport> => {
    recent ??= reconcileRecent({
      nc: o.nc,
      ledger: o.ledger,
      topups: o.topups,
      backend: o.topups.backend,
      sweep: o.sweep,
      log: o.log,
    }).finally(() => {
      recent = null;
    });
    return recent;
  };
  const timer = setInterval(() => {
    runRecent().catch((e) => o.log.warn({ err: (e as Error).message }, 'reconcile failed; retrying next time'));
  }, o.everyMs);
  timer.unref();
  return {
    run,
    async stop() {
      clearInterval(timer);
      await Promise.all([running?.catch(() => {}), recent?.catch(() => {})]);
    },
  };
}
