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
import { jetstream, jetstreamManager, DeliverPolicy, type JetStreamClient, type JetStreamManager, type ConsumerMessages } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { setTimeout as sleep } from 'node:timers/promises';
import { STREAMS, subjects } from '../../shared/names.ts';
import { ApiError } from '../../shared/errors.ts';
import { casPublish, isCasConflict } from '../../shared/nats/cas.ts';
import type { Logger } from '../../shared/log.ts';
import { withRetry } from '../../shared/runtime.ts';
import { CONSUME_EXPIRES_MS } from '../../shared/nats/connect.ts';
import type { LedgerMessage } from '../../shared/protocol/wallet.ts';
import { Projection, type Row } from './projection.ts';
import { faultPoint } from './fault.ts';

export interface Head {
  /** Stream sequence of the wallet's last entry (0: no entry yet). */
  seq: number;
  balance: number;
}

export type Decision =
  | { write: Omit<LedgerMessage, 'v' | 'balanceAfter' | 'at'> }
  | { done: Row | null };

export interface AppendResult {
  balance: number;
  /** The written entry, or the existing one for a retried business event. */
  entry: Row | null;
  duplicate: boolean;
}

const WALLET_ID = /^[A-Za-z0-9_-]{1,80}$/;

/** Wallets whose last head this instance remembers (a forgotten one costs one head read on its next write). */
const KNOWN_MAX = 100_000;

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

  constructor(private nc: NatsConnection, readonly projection: Projection, private log: Logger) {
    this.js = jetstream(nc);
  }

  /** Starts consuming LEDGER into the projection and resolves once it has caught up with the stream. */
  async start(): Promise<void> {
    // right after a cluster (re)start the stream may answer "temporarily unavailable" for a while
    const { info, messages } = await withRetry('ledger stream', async () => {
      this.jsm ??= await jetstreamManager(this.nc);
      const info = await this.jsm.streams.info(STREAMS.ledger);
      const consumer = await this.js.consumers.get(STREAMS.ledger, { deliver_policy: DeliverPolicy.All });
      return { info, messages: await consumer.consume({ expires: CONSUME_EXPIRES_MS }) };
    }, { log: this.log });
    this.messages = messages;
    const startSeq = info.state.last_seq;
    this.loop = (async () => {
      for await (const m of messages) {
        try {
          const walletId = m.subject.slice(subjects.ledger('').length);
          this.projection.apply(m.seq, walletId, m.json<LedgerMessage>());
        } catch (e) {
          this.log.error({ err: e, seq: m.seq }, 'ledger: unreadable entry skipped in projection');
        }
        this.applied = m.seq;
        // Nothing left to deliver: every entry up to the last sequence seen at start is applied,
        // even when that last entry no longer exists (deleted, or lost and restored by reconcile.ts)
        if (m.info.pending === 0 && startSeq > this.applied) this.applied = startSeq;
        if (this.waiters.length) {
          const ready = this.waiters.filter((w) => w.seq <= m.seq);
          this.waiters = this.waiters.filter((w) => w.seq > m.seq);
          for (const w of ready) w.resolve();
        }
      }
    })();
    // a stream whose every entry was deleted delivers nothing: there is nothing to wait for
    if (info.state.messages > 0) await this.until(startSeq, 60000);
    else this.applied = Math.max(this.applied, startSeq);
  }

  async stop(): Promise<void> {
    this.messages?.stop();
    await this.loop?.catch(() => {});
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
  }

  private until(seq: number, timeoutMs: number): Promise<void> {
    if (this.applied >= seq) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new ApiError('service_unavailable', `ledger projection did not reach ${seq} in ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push({ seq, resolve: () => { clearTimeout(t); resolve(); } });
    });
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
    if (head.seq > 0 && this.known.get(walletId)?.seq !== head.seq) await this.until(head.seq, 10000);
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
    return this.locked(walletId, async () => {
      for (let attempt = 0; ; attempt++) {
        const guess = this.known.get(walletId);
        const head = guess ?? await this.synced(walletId);
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
          if (guess) { this.known.delete(walletId); attempt--; continue; }
          return { balance: head.balance, entry: d.done, duplicate: d.done !== null };
        }
        const msg: LedgerMessage = { v: 1, ...d.write, balanceAfter: head.balance + d.write.amount, at: Date.now() };
        if (msg.balanceAfter < 0) throw new ApiError('internal', 'refusing a ledger entry that makes a balance negative');
        // forgotten until the write is known to have landed: a failed or unanswered publish may
        // still have been stored, and then the guess is stale (step 4 would catch it, at a cost)
        this.known.delete(walletId);
        try {
          const seq = await casPublish(this.js, subjects.ledger(walletId), JSON.stringify(msg), head.seq);
          faultPoint('after-ledger-write');
          this.projection.apply(seq, walletId, msg);
          this.remember(walletId, { seq, balance: msg.balanceAfter });
          return { balance: msg.balanceAfter, entry: this.projection.byRef(walletId, msg.ref) ?? null, duplicate: false };
        } catch (e) {
          if (!isCasConflict(e)) throw e;
          // A stale guess (another instance or a repair wrote since this instance's last write) is
          // no contention: read the head now, no pause, and it does not count as an attempt.
          if (guess) { attempt--; continue; }
          // Another instance wrote to this wallet in between: decide again on the new state.
          if (attempt > 200) throw new ApiError('service_unavailable', 'ledger: too much contention on one wallet');
          await sleep(Math.random() * Math.min(50, 2 + attempt * 2));
        }
      }
    });
  }
}
