// Top-ups: invoice creation, and settlement. A top-up document lives in the `topups` bucket and is
// only changed with revision checks. Settlement order, so that a restart at any point loses nothing
// and credits nothing twice:
//   1. the backend says "paid" (pushed by subscribe, or found by polling with backoff),
//   2. the ledger is credited with ref `topup:<id>` (idempotent, see ledger.ts),
//   3. the document becomes `paid` (revision-checked), and `evt.topup.<id>` is published.
// Every instance watches the bucket, so pending top-ups of a stopped instance are picked up by the
// others (or by itself after a restart).
import { Kvm, type KV, type KvWatchEntry } from '@nats-io/kv';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection, QueuedIterator } from '@nats-io/nats-core';
import type { Config } from '../../shared/config/index.ts';
import type { Logger } from '../../shared/log.ts';
import { withRetry } from '../../shared/runtime.ts';
import { BUCKETS, subjects } from '../../shared/names.ts';
import { ApiError } from '../../shared/errors.ts';
import { kvCasPut, kvUpdate } from '../../shared/nats/cas.ts';
import { newId } from '../../shared/ids.ts';
import { PAYLOADS_PER_EUR, publicTopup, type Topup, type TopupRecord, type TopupStatus } from '../../shared/protocol/wallet.ts';
import { createBackend, LightningError, type InvoiceBackend } from './lightning/index.ts';
import { createRateProvider, satsFor, type RateProvider } from './rates/index.ts';
import { creditTopup, TOPUP_MAX_CENTS, TOPUP_MIN_CENTS } from './money.ts';
import type { Ledger } from './ledger.ts';
import { faultPoint } from './fault.ts';
import { KeptTopups } from './topups-kept.ts';

/** EUR amount → cents, or bad_request: 0.25..100.00, at most two decimals. */
export function parseEur(eur: unknown): number {
  if (typeof eur !== 'number' || !Number.isFinite(eur)) throw new ApiError('bad_request', '`eur` must be a number', { field: 'eur' });
  const cents = Math.round(eur * 100);
  if (Math.abs(eur * 100 - cents) > 1e-6) throw new ApiError('bad_request', '`eur` has more than two decimals', { field: 'eur' });
  if (cents < TOPUP_MIN_CENTS || cents > TOPUP_MAX_CENTS)
    throw new ApiError('bad_request', '`eur` must be 0.25 to 100.00', { field: 'eur' });
  return cents;
}

/** Bonus Payloads of the highest tier whose minEur the amount reaches (rounded down). */
export function bonusFor(cents: number, tiers: { minEur: number; percent: number }[]): number {
  const tier = tiers.filter((t) => cents >= Math.round(t.minEur * 100)).sort((a, b) => b.percent - a.percent)[0];
  return tier ? Math.floor((cents * (PAYLOADS_PER_EUR / 100) * tier.percent) / 100) : 0;
}

interface Watched {
  paymentHash: string;
  /** Whose it is (unknown for a moment after a start that resumed it from the kept file). */
  walletId?: string;
  nextCheck: number;
  delay: number;
  /** When the node was last asked about it (ms): GET /v1/topups/{id} reuses an answer this recent. */
  lookedUpAt?: number;
}

/** A client's GET of a pending top-up asks the node at most this often (issue 44 item 2). */
export const LOOKUP_REUSE_MS = 2000;
/** How often the unpaid top-ups past their retention are looked for; at most this many leave per pass. */
const UNPAID_SWEEP_MS = 5000;
const UNPAID_SWEEP_BATCH = 200;

/**
 * A top-up document final and unchanged for this long is taken as reconciled when a new projection
 * file reads every top-up again (the periodic reconciliation runs every 10 minutes by default, so a
 * day is many runs; docs/reliability.md "Lightning reconciliation"; the rolling pass reaches the rest).
 */
export const RECONCILED_AFTER_MS = 24 * 3600_000;

export class Topups {
  private nc: NatsConnection;
  private config: Config;
  private log: Logger;
  private ledger: Ledger;
  private kv!: KV;
  private js: JetStreamClient;
  backend!: InvoiceBackend;
  private rates!: RateProvider;
  /** What the watch has seen, kept in the projection's file; also the reconciliation's work list. */
  kept!: KeptTopups;
  private pending = new Map<string, Watched>();
  private byHash = new Map<string, string>();
  private checking = new Map<string, Promise<void>>();
  private watch: QueuedIterator<KvWatchEntry> | undefined;
  private sub: { stop(): void } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Top-ups being created (between the cap's check and the document), per wallet. */
  private creating = new Map<string, number>();
  private lastUnpaidSweep = 0;
  private sweepingUnpaid = false;
  /** The bucket revision the watch resumed after (0: it read every current value), and the changes it delivered since (tests). */
  resumedFrom = 0;
  watched = 0;

  constructor(o: { nc: NatsConnection; config: Config; log: Logger; ledger: Ledger }) {
    this.nc = o.nc;
    this.config = o.config;
    this.log = o.log;
    this.ledger = o.ledger;
    this.js = jetstream(o.nc);
  }

  async start(): Promise<void> {
    this.kv = await withRetry('topups bucket', () => new Kvm(this.nc).open(BUCKETS.topups), { log: this.log });
    this.backend = await createBackend({ config: this.config, nc: this.nc, log: this.log });
    this.rates = createRateProvider(this.config, this.log);
    this.sub = this.backend.subscribe?.((hash) => {
      const id = this.byHash.get(hash);
      if (id) void this.check(id);
    });
    // Pending top-ups left by anybody, then every change. What the last run saw is kept in the
    // projection's file (topups-kept.ts): the watch resumes after it, so a start does not read every
    // top-up document ever made; a new or untrusted file reads every current value once.
    const kept = (this.kept = new KeptTopups(this.ledger.projection.database));
    const kv = this.kv;
    const info = (await withRetry('topups bucket status', () => kv.status(), { log: this.log })).streamInfo;
    const resume = kept.resume({ stream: info.config.name, created: info.created, lastSeq: info.state.last_seq });
    for (const p of resume?.pending ?? []) this.track(p);
    // the kept file knows no owner: read them (few: a pending top-up ends with its invoice) for the cap
    for (const p of resume?.pending ?? [])
      void this.read(p.id)
        .then((r) => {
          const w = this.pending.get(p.id);
          if (r && w) w.walletId = r.rec.walletId;
        })
        .catch(() => {});
    this.resumedFrom = resume?.revision ?? 0;
    this.watch = await withRetry('topups watch', () => kv.watch(resume ? { resumeFromRevision: resume.revision + 1 } : {}), {
      log: this.log,
    });
    // Every change goes on the reconciliation's work list, except, when a new file reads every
    // current value, the documents that were final and unchanged for RECONCILED_AFTER_MS: earlier
    // reconciliations have looked at those, and the audit's full reconciliation still does.
    const oldFinal = (r: TopupRecord, update: boolean) =>
      !resume && !update && r.status !== 'pending' && r.updatedAt < Date.now() - RECONCILED_AFTER_MS;
    void (async () => {
      for await (const e of this.watch!) {
        this.watched++;
        if (e.operation !== 'PUT' || !e.value.length) {
          this.forget(e.key);
          kept.seen(e.revision, e.key, null, false);
          continue;
        }
        const r = e.json<TopupRecord>();
        if (r.status === 'pending') this.track(r);
        else this.forget(r.id);
        const unpaidEndedAt = r.status === 'expired' || r.status === 'failed' ? r.updatedAt : null;
        kept.seen(e.revision, r.id, r.status === 'pending' ? r.paymentHash : null, !oldFinal(r, e.isUpdate), unpaidEndedAt);
      }
    })().catch((e) => {
      if (!this.stopped) this.log.error({ err: e }, 'topups: watch ended');
    });
    this.timer = setInterval(() => this.tick(), Math.min(this.config.wallet.lightning.pollMs, 1000));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.sub?.stop();
    this.watch?.stop();
    await Promise.allSettled([...this.checking.values()]);
    await this.backend?.close?.();
  }

  /** Pending top-ups this instance watches. */
  get watching(): number {
    return this.pending.size;
  }

  private track(r: { id: string; paymentHash: string; walletId?: string }) {
    const known = this.pending.get(r.id);
    if (known) {
      known.walletId ??= r.walletId;
      return;
    }
    this.pending.set(r.id, {
      paymentHash: r.paymentHash,
      ...(r.walletId ? { walletId: r.walletId } : {}),
      nextCheck: Date.now() + this.config.wallet.lightning.pollMs,
      delay: this.config.wallet.lightning.pollMs,
    });
    this.byHash.set(r.paymentHash, r.id);
  }

  private forget(id: string) {
    const w = this.pending.get(id);
    if (w) this.byHash.delete(w.paymentHash);
    this.pending.delete(id);
  }

  private tick() {
    const now = Date.now();
    if (now - this.lastUnpaidSweep >= UNPAID_SWEEP_MS && !this.sweepingUnpaid) {
      this.lastUnpaidSweep = now;
      this.sweepingUnpaid = true;
      void this.sweepUnpaid()
        .catch((e) => this.log.warn({ err: (e as Error).message }, 'topups: unpaid sweep failed; next pass retries'))
        .finally(() => {
          this.sweepingUnpaid = false;
        });
    }
    for (const [id, w] of this.pending) {
      if (w.nextCheck > now) continue;
      w.delay = Math.min(w.delay * 2, this.config.wallet.lightning.maxPollMs);
      w.nextCheck = now + w.delay;
      void this.check(id);
    }
  }

  /** A top-up's document as it is now, or null (never made, or deleted). */
  async record(id: string): Promise<TopupRecord | null> {
    return (await this.read(id))?.rec ?? null;
  }

  private async read(id: string): Promise<{ rec: TopupRecord; revision: number } | null> {
    const e = await this.kv.get(id);
    if (!e || e.operation !== 'PUT' || !e.value.length) return null;
    return { rec: e.json<TopupRecord>(), revision: e.revision };
  }

  private async balance(walletId: string) {
    return (await this.ledger.head(walletId)).balance;
  }

  /** Unpaid top-ups of a wallet this instance knows of (every instance watches every pending one), and those being made. */
  private unpaidOf(walletId: string): number {
    let n = this.creating.get(walletId) ?? 0;
    for (const w of this.pending.values()) if (w.walletId === walletId) n++;
    return n;
  }

  /**
   * Documents of top-ups that ended unpaid more than `unpaidRetentionSeconds` ago leave the bucket:
   * purged by subject, so nothing of them stays (a KV delete would keep a marker for ever). Every
   * instance may do it; a purge of what is gone already does nothing.
   */
  async sweepUnpaid(now = Date.now()): Promise<number> {
    const due = this.kept.unpaidEndedBefore(now - this.config.wallet.lightning.unpaidRetentionSeconds * 1000, UNPAID_SWEEP_BATCH);
    if (!due.length) return 0;
    const jsm = await this.js.jetstreamManager();
    const stream = `KV_${BUCKETS.topups}`;
    for (const id of due) {
      // a document that changed since (paid after all?) stays: only what is still unpaid leaves
      const r = await this.read(id);
      if (!r || r.rec.status === 'expired' || r.rec.status === 'failed')
        await jsm.streams.purge(stream, { filter: `$KV.${BUCKETS.topups}.${id}` });
      this.kept.unpaidGone(id);
    }
    this.log.info({ count: due.length }, 'topups: unpaid top-ups past their retention left the bucket');
    return due.length;
  }

  async create(walletId: string, eur: unknown): Promise<{ topup: Topup; balance: number }> {
    const cents = parseEur(eur);
    const max = this.config.wallet.lightning.maxUnpaidTopups;
    if (this.unpaidOf(walletId) >= max)
      throw new ApiError(
        'rate_limited',
        `this wallet has ${max} unpaid top-ups (wallet.lightning.maxUnpaidTopups): pay one or let it expire (${Math.ceil(this.config.wallet.lightning.invoiceExpirySeconds / 60)} minutes at most) before asking for another`,
        { limit: 'unpaidTopups', retryAfter: 60 },
        { 'retry-after': '60' },
      );
    this.creating.set(walletId, (this.creating.get(walletId) ?? 0) + 1);
    try {
      return await this.createOne(walletId, cents);
    } finally {
      const n = (this.creating.get(walletId) ?? 1) - 1;
      if (n > 0) this.creating.set(walletId, n);
      else this.creating.delete(walletId);
    }
  }

  private async createOne(walletId: string, cents: number): Promise<{ topup: Topup; balance: number }> {
    const bonus = bonusFor(cents, this.config.wallet.bonus);
    const id = newId('t');
    let rate;
    try {
      rate = await this.rates.get();
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'topup: no exchange rate');
      throw new ApiError('invoice_failed', 'No current exchange rate; the invoice could not be made. Nothing was charged.');
    }
    const sats = satsFor(cents, rate.eurPerBtc);
    const expiry = this.config.wallet.lightning.invoiceExpirySeconds;
    let inv;
    try {
      inv = await this.backend.createInvoice(sats, `Payloads top-up ${id}: ${(cents / 100).toFixed(2)} EUR`, expiry);
    } catch (e) {
      this.log.warn({ err: (e as Error).message, backend: this.backend.name }, 'topup: invoice creation failed');
      throw new ApiError('invoice_failed', 'The Lightning backend could not create an invoice. Nothing was charged.');
    }
    const now = Date.now();
    const rec: TopupRecord = {
      id,
      walletId,
      status: 'pending',
      eur: cents / 100,
      eurCents: cents,
      payloads: cents * (PAYLOADS_PER_EUR / 100) + bonus,
      bonusPayloads: bonus,
      bolt11: inv.bolt11,
      sats,
      expiresAt: inv.expiresAt,
      createdAt: now,
      updatedAt: now,
      backend: this.backend.name,
      paymentHash: inv.paymentHash,
      rate,
    };
    await kvCasPut(this.kv, id, JSON.stringify(rec), 0);
    this.track(rec);
    await this.event(rec);
    return { topup: publicTopup(rec), balance: await this.balance(walletId) };
  }

  async get(walletId: string, topupId: unknown): Promise<{ topup: Topup; balance: number }> {
    if (typeof topupId !== 'string' || !/^[A-Za-z0-9_-]{1,80}$/.test(topupId)) throw new ApiError('not_found', 'No such top-up.');
    let r = await this.read(topupId);
    if (!r || r.rec.walletId !== walletId) throw new ApiError('not_found', 'No such top-up.');
    const w = this.pending.get(topupId);
    if (r.rec.status === 'pending') {
      // A poll from the client is a good moment to look: it makes "paid" visible at once. A slow
      // backend does not hold the answer longer than 2 s (the check goes on in the background).
      // The node is asked at most once per LOOKUP_REUSE_MS per top-up, however often clients ask: a
      // poll within that time of a lookup reuses its answer, and waits for it while it is under way
      // (the document read above may be older than the node's answer: a poll right after a background
      // check asked the node answered "pending" for an invoice the node had just called expired)
      const recent = !!w?.lookedUpAt && Date.now() - w.lookedUpAt < LOOKUP_REUSE_MS;
      const look = recent ? this.checking.get(topupId) : this.check(topupId);
      if (look) {
        await Promise.race([look, new Promise((r) => setTimeout(r, 2000).unref())]);
        r = (await this.read(topupId)) ?? r;
      }
    }
    return { topup: publicTopup(r.rec), balance: await this.balance(walletId) };
  }

  /** dev backend only: the operator marks the invoice paid; settlement then runs as for a real payment. */
  async devPay(topupId: unknown): Promise<{ topup: Topup; balance: number; alreadyPaid: boolean }> {
    if (!this.backend.pay) throw new ApiError('bad_request', `the ${this.backend.name} Lightning backend is paid by real payments only`);
    if (typeof topupId !== 'string') throw new ApiError('not_found', 'No such top-up.');
    const r = await this.read(topupId);
    if (!r) throw new ApiError('not_found', 'No such top-up.');
    if (r.rec.status !== 'pending' && r.rec.status !== 'paid') throw new ApiError('bad_request', `the top-up is ${r.rec.status}`);
    let alreadyPaid: boolean;
    try {
      ({ alreadyPaid } = await this.backend.pay(r.rec.paymentHash));
    } catch (e) {
      throw new ApiError('bad_request', (e as Error).message);
    }
    await this.check(topupId);
    const after = (await this.read(topupId))!;
    return { topup: publicTopup(after.rec), balance: await this.balance(after.rec.walletId), alreadyPaid };
  }

  /** Look at the backend and move the top-up on. One check per top-up at a time in this instance. */
  check(id: string): Promise<void> {
    const running = this.checking.get(id);
    if (running) return running.then(() => this.checkOnce(id)).catch(() => {});
    const p = this.checkOnce(id)
      .catch((e) => {
        this.log.warn({ err: (e as Error).message, topupId: id }, 'topup: check failed; will retry');
      })
      .finally(() => {
        if (this.checking.get(id) === p) this.checking.delete(id);
      });
    this.checking.set(id, p);
    return p;
  }

  private async checkOnce(id: string): Promise<void> {
    const r = await this.read(id);
    if (!r || r.rec.status !== 'pending') return;
    const w = this.pending.get(id);
    if (w) w.lookedUpAt = Date.now();
    let st;
    try {
      st = await this.backend.lookupInvoice(r.rec.paymentHash);
    } catch (e) {
      // A node that no longer knows the invoice (e.g. its database was reset): once the invoice is
      // past its expiry it can no longer be paid, so the top-up fails. Before that: retry later.
      if (e instanceof LightningError && e.status === 404 && Date.now() > r.rec.expiresAt + 60_000)
        return this.finish(id, 'failed', 'the node does not know the invoice');
      throw e;
    }
    if (st.state === 'paid') return this.settle(id);
    if (st.state === 'failed') return this.finish(id, 'failed', st.reason);
    // Only the node's word makes a top-up final: an invoice it still reports open past our idea of
    // its expiry (clock skew, a node that settles late) stays pending and is polled on (at most every
    // maxPollMs), so a payment that settles afterwards is still credited.
    if (st.state === 'expired') return this.finish(id, 'expired');
  }

  /** Credit (idempotent) and then mark paid; safe to run any number of times, in any instance. */
  async settle(id: string): Promise<void> {
    const first = await this.read(id);
    if (!first || first.rec.status === 'paid') return;
    const res = await creditTopup(this.ledger, first.rec.walletId, id, first.rec.payloads, first.rec.bonusPayloads);
    faultPoint('after-credit');
    const rec = await this.transition(id, (cur) =>
      cur.status === 'paid'
        ? null
        : {
            ...cur,
            status: 'paid',
            paidAt: Date.now(),
            updatedAt: Date.now(),
            ...(res.entry ? { entryId: res.entry.id } : {}),
          },
    );
    if (rec) this.log.info({ topupId: id, walletId: rec.walletId, payloads: rec.payloads }, 'topup paid');
  }

  private async finish(id: string, status: Exclude<TopupStatus, 'pending' | 'paid'>, reason?: string): Promise<void> {
    await this.transition(id, (cur) =>
      cur.status !== 'pending' ? null : { ...cur, status, updatedAt: Date.now(), ...(reason ? { failedReason: reason } : {}) },
    );
  }

  /**
   * Move a top-up to its next state with a revision check, re-reading on a conflict; `next` answers
   * null when there is nothing to do. Announces the new state. Returns it, or null.
   */
  private async transition(id: string, next: (cur: TopupRecord) => TopupRecord | null): Promise<TopupRecord | null> {
    // the watcher and a poll may race on one top-up: the loser re-reads and usually finds nothing to do
    let rec: TopupRecord | null = null;
    await kvUpdate(this.kv, id, (e) => {
      rec = e && e.operation === 'PUT' && e.value.length ? next(e.json<TopupRecord>()) : null;
      return rec ? JSON.stringify(rec) : undefined;
    });
    if (!rec) return null;
    this.forget(id);
    await this.event(rec);
    return rec;
  }

  private async event(rec: TopupRecord) {
    const body = { id: rec.id, walletId: rec.walletId, status: rec.status, payloads: rec.payloads, at: rec.updatedAt };
    await this.js.publish(subjects.evtTopup(rec.id), JSON.stringify(body), { msgID: `topup:${rec.id}:${rec.status}` }).catch((e) => {
      this.log.warn({ err: (e as Error).message, topupId: rec.id }, 'topup: event not published');
    });
  }
}
