// Balances read by the gateway (GET /v1/balance, quotes) without a wallet request each.
//
// The wallet is the only writer of the LEDGER stream; every entry carries the wallet's balance after
// it, so a wallet's balance is its last entry's `balanceAfter` (what the wallet's own `balance`
// endpoint reads). Asking the wallet costs two hops and the wallet's own stream read per request,
// and every gateway request queued behind the one wallet process. A read here answers "as of now":
// every ledger write acknowledged before it (a charge, a refund by the supervisor, a paid top-up) is
// in its answer — read-your-writes, not a cache (a lagging balance was declined in sessions 13-14).
// Nothing here writes money: charges and refunds still go through the wallet, which checks the
// balance against the stream with an expected sequence.
//
// Two ways, both with a cost that does not grow with the number of wallets (issue 26):
// - Where direct gets are strict (one replica, shared/nats/provision.ts: the one server storing the
//   ledger answers, after the write was acknowledged), a direct get of the wallet's OWN last entry
//   (`last_by_subj: ledger.<walletId>`, one subject's index entry) sent after the read arrived is the
//   answer. Reads of one wallet arriving together share one get (the same rule as
//   shared/nats/fresh.ts). Until session 15 the read asked for the last entry of `ledger.>` and waited
//   for a consumer's copy to reach it: nats-server answers that wildcard by walking every wallet's
//   subject (0.5 ms at 1 wallet, about 10 ms at 100,000).
// - Otherwise (a replicated ledger: a replica that lags could answer a direct get), one ordered
//   consumer on LEDGER keeps the last entry per wallet, and a read asks the stream's last sequence
//   by stream info (a constant-cost request to the leader, shared by the reads arriving together)
//   and waits until the consumer has delivered up to it. The copy holds at most
//   `server.balanceCopyWallets` wallets, least recently used out first; a wallet not in it costs one
//   read of its last entry from the stream.
// While neither works (the consumer restarts, a read waits too long), the wallet is asked as before.
import type { NatsConnection } from '@nats-io/nats-core';
import { DeliverPolicy, jetstream, jetstreamManager, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import { STREAMS, subjects } from '../shared/names.ts';
import { wallet, type LedgerMessage } from '../shared/protocol/wallet.ts';
import { AppliedUpTo, freshRead } from '../shared/nats/fresh.ts';

/** How long a read waits for the consumer to reach the stream's last sequence before asking the wallet. */
const SYNC_WAIT_MS = 1000;
/** Wallets kept by default (server.balanceCopyWallets): least recently used out first. */
let maxWallets = 100_000;

/** The copy's bound (gateway start, from config): each wallet kept costs about 200 bytes (bench/wallet-history.ts). */
export function setBalanceCopyLimit(wallets: number) {
  maxWallets = Math.max(1, wallets);
}
/** A gap wider than this is not checked for deleted sequences (the wallet is asked instead). */
const MAX_GAP = 1000;
/**
 * A direct get not answered within this is given up for stream info. Turned off on the server, it is
 * not refused at once: the JetStream API's own subscription takes it and nobody answers.
 */
const DIRECT_WAIT_MS = 500;
/** After a direct get failed, reads ask stream info for this long before trying one again. */
const DIRECT_PAUSE_MS = 5000;
/** At most one replacement of a stalled consumer per this interval. */
const REPLACE_EVERY_MS = 10_000;
/** Pause before a consumer that ended is started again. */
const RESTART_MS = 1000;

interface Head {
  seq: number;
  balance: number;
}

interface WalletGet {
  p: Promise<Head> | null;
  next: Promise<Head> | null;
}

class BalanceCopy {
  private heads = new Map<string, Head>();
  /** LEDGER sequences applied to `heads` (or that did not exist). -1: no consumer running. */
  private applied = new AppliedUpTo(-1);
  private stopped = false;
  private jsm?: JetStreamManager;
  /** The running consumer's messages, while one runs. */
  private current?: { stop(): void };
  private lastReplace = 0;
  /**
   * Counts consumer restarts. A wallet read from the stream is kept only if the consumer that will
   * deliver its later entries is still the one running: a new one starts at the stream's end then
   * and would never deliver entries written between that read and its start.
   */
  private generation = 0;
  /** The consumer ended and is being started again: reads ask the wallet meanwhile instead of waiting. */
  private restarting = false;
  private readonly lastSeq: () => Promise<number>;
  /**
   * The ledger allows direct gets, which it does only with one replica (shared/nats/provision.ts):
   * then the one server storing it answers them, as strictly as a stream-info request and at about
   * half its cost (no mirror of the ledger exists: one made with `mirror_direct` would answer too).
   * Taken from every stream-info answer (the consumer's start, reads while direct gets are off).
   */
  private direct = false;
  /** A direct get failed (turned off, or the server slow): none is tried before this time. */
  private directPausedUntil = 0;
  private readonly prefix = subjects.ledger('');
  /** Wallets with a direct get in flight, and the one queued behind it. */
  private inFlight = new Map<string, WalletGet>();

  private readonly nc: NatsConnection;
  constructor(nc: NatsConnection) {
    this.nc = nc;
    this.lastSeq = freshRead(() => this.lastSequence());
    void this.loop();
  }

  get alive() {
    return !this.stopped;
  }

  private async manager() {
    return (this.jsm ??= await jetstreamManager(this.nc));
  }

  private async loop() {
    while (!this.stopped && !this.nc.isClosed()) {
      try {
        await this.consumeOnce();
      } catch (err) {
        const name = (err as Error)?.name;
        if (name === 'ClosedConnectionError' || name === 'ConnectionDrainingError') break;
      }
      this.heads.clear();
      this.generation++;
      this.restarting = true;
      // reads waiting on the consumer that ended ask the wallet now
      this.applied.reset(-1);
      if (!this.stopped) await new Promise((r) => setTimeout(r, RESTART_MS).unref());
    }
    this.stopped = true;
    this.applied.reset(-1);
  }

  /** The stream's last sequence, from a stream-info request sent now (answered by the stream's leader). */
  private async lastSequence(): Promise<number> {
    const info = await (await this.manager()).streams.info(STREAMS.ledger);
    this.direct = directIsStrict(info.config);
    return info.state.last_seq;
  }

  /**
   * The wallet's last entry by a direct get sent after the caller arrived, where that is strict;
   * null where it is not (or failed: then reads use the copy for DIRECT_PAUSE_MS).
   */
  private async directHead(walletId: string): Promise<Head | null> {
    if (!this.direct || Date.now() < this.directPausedUntil) return null;
    try {
      return await this.walletHeadShared(walletId);
    } catch {
      // turned off (the ledger was replicated since) or the server is slow: the stream info of the
      // copy's read says which, and a slow server costs a read the direct get's timeout only once a pause
      this.directPausedUntil = Date.now() + DIRECT_PAUSE_MS;
      return null;
    }
  }

  /** Reads of one wallet arriving while its get is in flight share the next one (sent after they arrived). */
  private walletHeadShared(walletId: string): Promise<Head> {
    const s = this.inFlight.get(walletId);
    if (!s) return this.sendWalletHead(walletId, { p: null, next: null });
    if (s.next) return s.next;
    const next = s
      .p!.then(
        () => {},
        () => {},
      )
      .then(() => {
        s.next = null;
        return this.sendWalletHead(walletId, s);
      });
    s.next = next;
    return next;
  }

  private sendWalletHead(walletId: string, s: WalletGet): Promise<Head> {
    const p = walletLastDirect(this.nc, walletId);
    s.p = p;
    this.inFlight.set(walletId, s);
    // the map holds only wallets with a get in flight: bounded by the reads in progress
    const clear = () => {
      if (s.p === p && !s.next) this.inFlight.delete(walletId);
    };
    p.then(clear, clear);
    return p;
  }

  /** From the stream's current end on: earlier entries are read per wallet on first use. */
  private async consumeOnce() {
    const info = await (await this.manager()).streams.info(STREAMS.ledger);
    this.direct = directIsStrict(info.config);
    const start = info.state.last_seq;
    const consumer = await jetstream(this.nc).consumers.get(STREAMS.ledger, {
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: start + 1,
    });
    const messages = await consumer.consume();
    this.current = messages;
    this.restarting = false;
    this.applied.reach(start);
    for await (const m of messages) {
      if (this.stopped) {
        messages.stop();
        break;
      }
      try {
        this.keep(m.subject.slice(this.prefix.length), { seq: m.seq, balance: m.json<LedgerMessage>().balanceAfter });
      } catch {
        /* an unreadable entry: that wallet is read from the stream */ this.heads.delete(m.subject.slice(this.prefix.length));
      }
      this.applied.reach(m.seq);
    }
  }

  private keep(walletId: string, head: Head) {
    const had = this.heads.get(walletId);
    if (had && had.seq >= head.seq) return;
    this.heads.delete(walletId); // re-inserted last: the map stays in order of last use
    this.heads.set(walletId, head);
    while (this.heads.size > maxWallets) this.heads.delete(this.heads.keys().next().value!);
  }

  /**
   * The stream's entries up to its last sequence as of now are applied; false if not within the
   * wait. Sequences the stream deleted (a repaired ledger) never arrive: they count as applied.
   */
  private async synced(): Promise<boolean> {
    if (this.restarting) return false;
    const last = await this.lastSeq();
    // while the consumer starts (applied -1) this waits for it too
    if (await this.applied.reached(last, SYNC_WAIT_MS)) return true;
    if (this.applied.seq < 0) return false;
    // nothing arrived: the missing sequences may be ones the stream no longer holds
    const from = this.applied.seq;
    if (last - from > MAX_GAP) return false;
    const detail = await (await this.manager()).streams.info(STREAMS.ledger, { deleted_details: true });
    const deleted = new Set(detail.state.deleted ?? []);
    for (let seq = from + 1; seq <= last; seq++) {
      if (seq >= detail.state.first_seq && !deleted.has(seq)) {
        if (this.applied.seq === from) this.replaceStalled();
        return false;
      }
    }
    this.applied.reach(last);
    return true;
  }

  /**
   * The consumer delivered nothing for a whole wait while behind the stream (its server-side state
   * lost in a failover; the client would reset it only after missed heartbeats): start a fresh one,
   * at most once per interval. Reads ask the wallet meanwhile.
   */
  private replaceStalled() {
    if (!this.current || Date.now() - this.lastReplace < REPLACE_EVERY_MS) return;
    this.lastReplace = Date.now();
    this.current.stop();
    this.current = undefined;
  }

  async balance(walletId: string): Promise<number> {
    const direct = await this.directHead(walletId);
    if (direct) return direct.balance;
    const generation = this.generation;
    const synced = await this.synced().catch(() => false);
    // the consumer restarted meanwhile: what it had applied is gone
    if (!synced || generation !== this.generation) return (await wallet.balance(this.nc, walletId)).balance;
    const kept = this.heads.get(walletId);
    if (kept) {
      this.heads.delete(walletId); // most recently used
      this.heads.set(walletId, kept);
      return kept.balance;
    }
    // no entry since the consumer started: the wallet's last entry straight from the stream
    const m = await (await this.manager()).streams.getMessage(STREAMS.ledger, { last_by_subj: subjects.ledger(walletId) });
    // no entry yet is kept too (sequence 0): the wallet's first entry comes through the consumer
    const head = m ? { seq: m.seq, balance: m.json<LedgerMessage>().balanceAfter } : { seq: 0, balance: 0 };
    if (generation !== this.generation) return head.balance; // right now, but not to be kept
    this.keep(walletId, head);
    return this.heads.get(walletId)?.balance ?? head.balance;
  }

  stop() {
    this.stopped = true;
    this.current?.stop();
  }
}

/** Direct gets answered by the one server storing the stream: as strict as asking its leader. */
const directIsStrict = (c: StreamConfig) => c.allow_direct === true && c.num_replicas === 1;

/**
 * A wallet's last entry by a direct get (sequence 0: no entry yet); throws where the ledger refuses
 * direct gets. The request form, as below; the subject is literal, so the server looks up one
 * subject, whatever the number of wallets. Strict only with one replica (see BalanceCopy.direct).
 */
export async function walletLastDirect(nc: NatsConnection, walletId: string): Promise<Head> {
  const m = await nc.request(`$JS.API.DIRECT.GET.${STREAMS.ledger}`, JSON.stringify({ last_by_subj: subjects.ledger(walletId) }), {
    timeout: DIRECT_WAIT_MS,
  });
  if (m.headers?.code === 404) return { seq: 0, balance: 0 };
  const seq = Number(m.headers?.get('Nats-Sequence'));
  if (!m.headers || m.headers.hasError || !Number.isSafeInteger(seq) || seq < 1)
    throw new Error(`direct get: ${m.headers?.code} ${m.headers?.description}`);
  return { seq, balance: m.json<LedgerMessage>().balanceAfter };
}

/**
 * No longer used by reads (kept for bench/gateway.ts and bench/wallet-history.ts, which compare):
 * the ledger's last sequence from a direct get of its last message (0: an empty ledger); throws
 * where the ledger refuses direct gets. Strict only with one replica (see BalanceCopy.direct).
 */
export async function ledgerLastSeqDirect(nc: NatsConnection): Promise<number> {
  // the request form, not the subject-appended one the client uses for last_by_subj, which would
  // publish to a subject ending in a wildcard
  const m = await nc.request(`$JS.API.DIRECT.GET.${STREAMS.ledger}`, JSON.stringify({ last_by_subj: subjects.ledgerAll }), {
    timeout: DIRECT_WAIT_MS,
  });
  if (m.headers?.code === 404) return 0;
  const seq = Number(m.headers?.get('Nats-Sequence'));
  if (!m.headers || m.headers.hasError || !Number.isSafeInteger(seq) || seq < 1)
    throw new Error(`direct get: ${m.headers?.code} ${m.headers?.description}`);
  return seq;
}

const copies = new WeakMap<NatsConnection, BalanceCopy>();

/** A wallet's balance as of now (every ledger write acknowledged before the call is in it). */
export function readBalance(nc: NatsConnection, walletId: string): Promise<number> {
  let c = copies.get(nc);
  if (!c || !c.alive) {
    c = new BalanceCopy(nc);
    copies.set(nc, c);
  }
  return c.balance(walletId);
}
