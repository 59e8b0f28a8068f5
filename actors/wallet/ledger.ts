// The ledger: one LEDGER subject per wallet, append-only. Every write is
//   1. read the wallet's last message (its sequence S and balance),
//   2. make sure the projection holds every entry of the wallet up to S,
//   3. decide from that state (already done? enough money?),
//   4. publish only if the wallet's last entry is still S (shared/nats/cas.ts: the expected
//      subject sequence, which nats-server >= 2.10 holds on a replicated stream too).
// Step 4 fails if anybody wrote to the wallet after step 1, so the decision of step 3 is atomic with
// the write: no two writers spend one balance, and a business event (its `ref`) found absent in
// step 3 is still absent when written, which makes every operation idempotent for ever, not just
// inside a dedupe window.
// Step 1 is skipped when this instance made the wallet's last write itself (issue 17, the hot path):
// it knows that entry's sequence and balance, and applied it to the projection, which with the
// earlier entries it had decided on then holds the whole wallet up to it. That head is only a guess
// (another instance, an operator's repair may have written or deleted since); step 4 checks it as it
// checks a head read from the stream: a stale guess is refused, forgotten, and the operation decided
// again on a fresh read. A refusal or a duplicate is never answered from a guess: only a write is
// checked by step 4, so those are decided again on a fresh read too.
import {
  jetstream,
  jetstreamManager,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type ConsumerMessages,
  type StreamInfo,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { STREAMS, subjects } from '../../shared/names.ts';
import { ApiError } from '../../shared/errors.ts';
import { casPublish, isCasConflict } from '../../shared/nats/cas.ts';
import type { Logger } from '../../shared/log.ts';
import { withRetry } from '../../shared/runtime.ts';
import { CONSUME_EXPIRES_MS } from '../../shared/nats/connect.ts';
import { retryTransient } from '../../shared/nats/transient.ts';
import type { LedgerMessage } from '../../shared/protocol/wallet.ts';
import { distrust } from './checkpoint.ts';
import { Projection, type Row } from './projection.ts';
import { faultPoint } from './fault.ts';

export interface Head {
  /** Stream sequence of the wallet's last entry (0: no entry yet). */
  seq: number;
  balance: number;
}

export type Decision = { write: Omit<LedgerMessage, 'v' | 'balanceAfter' | 'at'> } | { done: Row | null };

export interface AppendResult {
  balance: number;
  /** The written entry, or the existing one for a retried business event. */
  entry: Row | null;
  duplicate: boolean;
}

const WALLET_ID = /^[A-Za-z0-9_-]{1,80}$/;

/** Wallets whose last head this instance remembers (a forgotten one costs one head read on its next write). */
const KNOWN_MAX = 100_000;
/** Entries per projection transaction while catching up. */
const BATCH = 2000;
/** How long a read waits for its wallet's own entries while the projection is rebuilding. */
const WALLET_CATCH_UP_MS = 10_000;
/**
 * One ledger write waits this long for its ack, then is tried again from the head for up to
 * WRITE_RETRY_MS (issue 45: a write to a stale LEDGER leader waited out the client's 5 s default
 * and the caller's 10 s; a new leader is elected in 2-15 s on the shared machine). Both stay inside
 * a charge's 10 s request, so the wallet answers before the gateway gives up on it.
 */
const WRITE_TIMEOUT_MS = 2000;
const WRITE_RETRY_MS = 7000;
/**
 * A write waiting for the projection while its consumer has delivered nothing for this long: the
 * consumer is taken as stuck and started again from the last applied sequence (issue 45, session
 * 31: after a flapping link healed, nats.js's ordered consumer delivered nothing more, every
 * charge after a failed write waited out `until`, and job creation failed for minutes).
 */
export const PROJECTION_STUCK_MS = 3000;

export function checkWalletId(walletId: unknown): string {
  if (typeof walletId !== 'string' || !WALLET_ID.test(walletId)) throw new ApiError('bad_request', 'walletId is missing or malformed');
  return walletId;
}

export class Ledger {
  private js: JetStreamClient;
  private jsm!: JetStreamManager;
  private messages: ConsumerMessages | undefined;
  /** Highest stream sequence applied to the projection by the consumer (contiguous). */
  private applied = 0;
  private waiters: { seq: number; resolve: () => void }[] = [];
  /**
   * The head each wallet had after this instance's last write to it: the projection is complete up
   * to it (this instance decided on it and applied its own entry), so it serves as the guess for the
   * next write and as the shortcut in `synced`. Least recently written first; capped at KNOWN_MAX.
   */
  private known = new Map<string, Head>();
  private locks = new Map<string, Promise<unknown>>();
  private loop: Promise<void> | undefined;
  /** The stream's last sequence when the consumer started: below it, the projection is catching up. */
  private startSeq = 0;
  /** The consumer's last message had nothing pending after it. */
  private drained = false;
  private stopped = false;
  /** When the consumer last delivered (or started): the watchdog's clock. */
  private delivered = Date.now();
  private watchdog: NodeJS.Timeout | undefined;
  private restarting = false;
  /** Times the projection's consumer was started again by the watchdog (tests, diagnostics). */
  restarts = 0;
  /**
   * Names this instance's consumers (wallet_projection_<id>_<n>): an ordered consumer's name is its
   * prefix and a counter, so a prefix shared by two instances would make them pull from one consumer.
   */
  private readonly id = randomBytes(4).toString('hex');
  /** What the last start did (read by the tests and the start-time bench). */
  stats = { from: 0, startSeq: 0, appliedSinceStart: 0, rebuilt: false, caughtUpMs: null as number | null, walletCatchUps: 0 };

  private nc: NatsConnection;
  readonly projection: Projection;
  private log: Logger;
  constructor(nc: NatsConnection, projection: Projection, log: Logger) {
    this.nc = nc;
    this.projection = projection;
    this.log = log;
    this.js = jetstream(nc);
  }

  /**
   * Opens the projection's checkpoint against the stream and starts consuming LEDGER from there.
   * Resolves once the consumer runs, not once it has caught up (issue 26): the money path does not
   * wait for the whole projection, only for the wallet it works on (`synced`). A checkpoint that
   * cannot be trusted is thrown away and the projection rebuilt from sequence 1, in the background.
   */
  async start(): Promise<void> {
    this.jsm ??= await jetstreamManager(this.nc);
    // right after a cluster (re)start the stream may answer "temporarily unavailable" for a while
    const info = await withRetry('ledger stream', () => this.jsm.streams.info(STREAMS.ledger), { log: this.log });
    const from = await this.trustedCheckpoint(info);
    this.applied = from;
    this.startSeq = info.state.last_seq;
    this.stats = { from, startSeq: this.startSeq, appliedSinceStart: 0, rebuilt: this.stats.rebuilt, caughtUpMs: null, walletCatchUps: 0 };
    const began = Date.now();
    // a stream whose every entry after the checkpoint was deleted delivers nothing: nothing to wait for
    if (info.state.messages === 0 || from >= this.startSeq) this.caughtUp(began);
    this.run(await withRetry('ledger consumer', () => this.openConsumer(from + 1), { log: this.log }), began);
    this.watchdog = setInterval(() => this.unstick(), 1000);
    this.watchdog.unref();
  }

  private async openConsumer(fromSeq: number): Promise<ConsumerMessages> {
    const consumer = await this.js.consumers.get(STREAMS.ledger, {
      // a consumer started again has a prefix of its own: the ordered consumer numbers its names
      // from 1 again, and the stopped one's name may still be taken on the server
      name_prefix: `wallet_projection_${this.id}${this.restarts ? `_r${this.restarts}` : ''}`,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: fromSeq,
    });
    return consumer.consume({ expires: CONSUME_EXPIRES_MS });
  }

  private run(messages: ConsumerMessages, began: number): void {
    this.messages = messages;
    this.delivered = Date.now();
    this.loop = this.consume(messages, began).catch((e) => {
      // a drained or closed connection ends the consumer at stop; anything else is logged, never unhandled
      if (!this.stopped) this.log.error({ err: e }, 'ledger: projection consumer ended');
    });
  }

  /**
   * The watchdog: a write waits for the projection (`until`) and the consumer has delivered nothing
   * for PROJECTION_STUCK_MS: stop it and start a new one from the last applied sequence. Costs
   * nothing while nobody waits (no request is made to find out).
   */
  private unstick(): void {
    if (this.stopped || this.restarting || !this.waiters.length) return;
    if (Date.now() - this.delivered < PROJECTION_STUCK_MS) return;
    this.restarting = true;
    this.log.warn(
      { applied: this.applied, waitingFor: Math.min(...this.waiters.map((w) => w.seq)) },
      'ledger: the projection consumer delivered nothing while a write waited for it; starting it again',
    );
    const old = this.messages;
    const oldLoop = this.loop;
    void (async () => {
      old?.stop();
      // its last batch is applied as it ends (a wedged one is not waited for past a second)
      await Promise.race([oldLoop, new Promise((r) => setTimeout(r, 1000))]);
      if (this.stopped) return;
      this.restarts++;
      this.run(await this.openConsumer(this.applied + 1), Date.now());
    })()
      .catch((e) => this.log.warn({ err: e }, 'ledger: the projection consumer could not be started again; trying on the next check'))
      .finally(() => {
        this.restarting = false;
        this.delivered = Date.now(); // the next check gives the new consumer its time
      });
  }

  /** Where to resume: the checkpoint if the file is this stream's and not ahead of it, else 0 after a reset. */
  private async trustedCheckpoint(info: StreamInfo): Promise<number> {
    const cp = this.projection.checkpoint();
    const s = info.state;
    const why = await distrust(this.projection, info, this.jsm);
    if (!why) {
      this.log.info(
        { file: this.projection.file, checkpoint: cp!.applied, lastSeq: s.last_seq },
        'ledger projection: catching up from its checkpoint',
      );
      return cp!.applied;
    }
    this.log.warn(
      { file: this.projection.file, reason: why, lastSeq: s.last_seq },
      'ledger projection: not trusted, rebuilding it from the stream in the background',
    );
    this.projection.reset(info.config.name, info.created);
    this.stats.rebuilt = true;
    return 0;
  }

  private async consume(messages: ConsumerMessages, began: number): Promise<void> {
    let batch: { seq: number; walletId: string; m: LedgerMessage | null }[] = [];
    let timer: NodeJS.Timeout | undefined;
    const flush = () => {
      clearTimeout(timer);
      timer = undefined;
      if (!batch.length) return;
      const rows = batch;
      batch = [];
      let upTo = rows.at(-1)!.seq;
      // nothing left to deliver: every entry up to the last sequence seen at start is applied, even
      // when that last entry no longer exists (deleted, or lost and restored by reconcile.ts)
      if (this.drained && this.startSeq > upTo) upTo = this.startSeq;
      this.projection.applyBatch(rows, upTo);
      this.stats.appliedSinceStart += rows.length;
      this.reached(upTo);
    };
    try {
      for await (const m of messages) {
        this.delivered = Date.now();
        const walletId = m.subject.slice(subjects.ledger('').length);
        let body: LedgerMessage | null = null;
        try {
          body = m.json<LedgerMessage>();
        } catch (e) {
          this.log.error({ err: e, seq: m.seq }, 'ledger: unreadable entry skipped in projection');
        }
        batch.push({ seq: m.seq, walletId, m: body });
        this.drained = m.info.pending === 0;
        // one transaction per batch while catching up (a row's own transaction costs more than its
        // insert); live (or a reader waiting for it), at once; a batch left short by a pause is
        // written by the timer
        const live = m.seq >= this.startSeq || this.waiters.some((w) => w.seq <= m.seq);
        if (live || this.drained || batch.length >= BATCH) {
          const full = batch.length >= BATCH;
          flush();
          // buffered entries are handed over as microtasks, which never let I/O in: after each full
          // batch of a catch-up or rebuild, the event loop takes a turn (requests, in the embedded default)
          if (full) await new Promise<void>((r) => setImmediate(r));
        } else timer ??= setTimeout(flush, 20);
        if (this.stats.caughtUpMs === null && this.applied >= this.startSeq) this.caughtUp(began);
      }
    } finally {
      clearTimeout(timer);
      if (!this.stopped) flush();
    }
  }

  private caughtUp(began: number) {
    this.stats.caughtUpMs = Date.now() - began;
    this.log.info({ ...this.stats, file: this.projection.file }, 'ledger projection caught up');
  }

  private reached(seq: number) {
    if (seq <= this.applied) return;
    this.applied = seq;
    if (this.waiters.length) {
      const ready = this.waiters.filter((w) => w.seq <= seq);
      this.waiters = this.waiters.filter((w) => w.seq > seq);
      for (const w of ready) w.resolve();
    }
  }

  /** Every entry up to this sequence is in the projection (the orphan sweep reads no further). */
  get appliedUpTo(): number {
    return this.applied;
  }

  /** The projection is behind the stream's last sequence at start (catching up, or rebuilding). */
  get catchingUp(): boolean {
    return this.applied < this.startSeq;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.watchdog);
    this.messages?.stop();
    await this.loop;
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
  }

  private until(seq: number, timeoutMs: number): Promise<void> {
    if (this.applied >= seq) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const t = setTimeout(
        () => reject(new ApiError('service_unavailable', `ledger projection did not reach ${seq} in ${timeoutMs} ms`)),
        timeoutMs,
      );
      this.waiters.push({
        seq,
        resolve: () => {
          clearTimeout(t);
          resolve();
        },
      });
    });
  }

  /**
   * While the projection catches up, a wallet's own entries after the checkpoint are read from the
   * stream (a consumer filtered on its subject) and applied: the cost is that wallet's entries not
   * yet applied, never the whole stream's. The rows land ahead of the checkpoint (idempotent).
   */
  private async catchUpWallet(walletId: string, upTo: number): Promise<void> {
    const began = Date.now();
    const from = this.applied + 1;
    const consumer = await this.js.consumers.get(STREAMS.ledger, {
      name_prefix: `wallet_catch_up_${this.id}`,
      filter_subjects: [subjects.ledger(walletId)],
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: from,
    });
    let last = 0;
    while (last < upTo && this.applied < upTo) {
      if (Date.now() - began > WALLET_CATCH_UP_MS)
        throw new ApiError(
          'service_unavailable',
          `the ledger projection is rebuilding and the wallet's ${upTo - from} newest sequences were not read in time; try again shortly`,
        );
      let got = 0;
      for await (const m of await consumer.fetch({ max_messages: 500, expires: 2000 })) {
        got++;
        last = m.seq;
        this.projection.apply(m.seq, walletId, m.json<LedgerMessage>());
        this.stats.walletCatchUps++;
      }
      if (!got) break; // the head was deleted since: nothing more to read
    }
  }

  /** The wallet's last entry, straight from the stream. */
  async head(walletId: string): Promise<Head> {
    const m = await this.jsm.streams.getMessage(STREAMS.ledger, { last_by_subj: subjects.ledger(walletId) });
    if (!m) return { seq: 0, balance: 0 };
    return { seq: m.seq, balance: m.json<LedgerMessage>().balanceAfter };
  }

  /** The head, once the projection holds every entry of the wallet up to it. */
  async synced(walletId: string): Promise<Head> {
    const head = await this.head(walletId);
    if (head.seq === 0 || this.applied >= head.seq || this.known.get(walletId)?.seq === head.seq) return head;
    if (this.catchingUp) {
      await this.catchUpWallet(walletId, head.seq);
      this.remember(walletId, head); // complete up to it now: the guess for the next write, as after a write
    } else {
      await this.until(head.seq, 10000);
    }
    return head;
  }

  /** Per-wallet serialisation inside this instance; across instances the expected sequence decides. */
  private async locked<T>(walletId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(walletId) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => {});
    this.locks.set(walletId, tail);
    try {
      return await run;
    } finally {
      if (this.locks.get(walletId) === tail) this.locks.delete(walletId);
    }
  }

  private remember(walletId: string, head: Head): void {
    this.known.delete(walletId); // re-inserted last: the map stays in order of last write
    this.known.set(walletId, head);
    if (this.known.size > KNOWN_MAX) this.known.delete(this.known.keys().next().value!);
  }

  /** Append the entry `decide` asks for, atomically with the state it decided on. */
  append(walletId: string, decide: (head: Head) => Decision): Promise<AppendResult> {
    // a write (or the head read before it) that NATS did not answer, tried again from the head:
    // a write that was stored meanwhile is then found by its ref (`decide` answers it as done), and
    // one that was not cannot land later on the same base (the expected last sequence)
    return this.locked(walletId, () => retryTransient(() => this.appendOnce(walletId, decide), WRITE_RETRY_MS));
  }

  private async appendOnce(walletId: string, decide: (head: Head) => Decision): Promise<AppendResult> {
    for (let attempt = 0; ; attempt++) {
      const guess = this.known.get(walletId);
      const head = guess ?? (await this.synced(walletId));
      let d: Decision;
      try {
        d = decide(head);
      } catch (e) {
        if (!guess) throw e;
        // a refusal (insufficient funds, no such charge, too late) is answered only on a head read
        // from the stream: somebody else may have written since this instance's last write
        this.known.delete(walletId);
        attempt--;
        continue;
      }
      if ('done' in d) {
        // the same for a duplicate: its answer carries the current balance
        if (guess) {
          this.known.delete(walletId);
          attempt--;
          continue;
        }
        return { balance: head.balance, entry: d.done, duplicate: d.done !== null };
      }
      const msg: LedgerMessage = { v: 1, ...d.write, balanceAfter: head.balance + d.write.amount, at: Date.now() };
      if (msg.balanceAfter < 0) throw new ApiError('internal', 'refusing a ledger entry that makes a balance negative');
      // forgotten until the write is known to have landed: a failed or unanswered publish may
      // still have been stored, and then the guess is stale (step 4 would catch it, at a cost)
      this.known.delete(walletId);
      try {
        const seq = await casPublish(this.js, subjects.ledger(walletId), JSON.stringify(msg), head.seq, { timeout: WRITE_TIMEOUT_MS });
        faultPoint('after-ledger-write');
        this.projection.apply(seq, walletId, msg);
        this.remember(walletId, { seq, balance: msg.balanceAfter });
        return { balance: msg.balanceAfter, entry: this.projection.byRef(walletId, msg.ref) ?? null, duplicate: false };
      } catch (e) {
        if (!isCasConflict(e)) throw e;
        // A stale guess (another instance or a repair wrote since this instance's last write) is
        // no contention: read the head now, no pause, and it does not count as an attempt.
        if (guess) {
          attempt--;
          continue;
        }
        // Another instance wrote to this wallet in between: decide again on the new state.
        if (attempt > 200) throw new ApiError('service_unavailable', 'ledger: too much contention on one wallet');
        await sleep(Math.random() * Math.min(50, 2 + attempt * 2));
      }
    }
  }
}
