// A process's live copy of a KV bucket, fed by one watch, that can answer "as of now".
//
// A watch alone lags the writes by a moment: a reader answering from it could miss a write that was
// acknowledged just before the read (an instance that advertised, a job just created). `sync()`
// closes that gap: it asks the stream for its last sequence (a stream-info request, no consumer)
// and waits until the watch has delivered up to it. A watch that stopped delivering (the ordered
// consumer resets only after about a minute of missed heartbeats) or that ended is replaced by a
// fresh one, which delivers every key's last value again: `apply` must be idempotent.
import type { KV, KvWatchEntry } from '@nats-io/kv';
import type { Logger } from '../log.ts';
import { AppliedUpTo, freshRead } from './fresh.ts';
import { within } from '../runtime.ts';

/** How long a `sync()` waits in all, by default. */
const SYNC_WAIT_MS = 2000;
/** At most one replacement of a stalled watch per this interval. */
const REPLACE_EVERY_MS = 10_000;
/** Pause before a watch that ended (an error, a lost consumer) is started again. */
const RESTART_DELAY_MS = 1000;

export interface KvMirrorOptions {
  /** A watch that delivered nothing for this long while readers waited on it is replaced (default 3 s). */
  stallMs?: number;
  log?: Logger;
}

export class KvMirror {
  /**
   * Stream sequences applied (or gone before the watch saw them). Only moves once the current
   * watch has caught up with the values it started with: during that replay a later write to a
   * key may not have arrived yet.
   */
  private applied = new AppliedUpTo(0);
  private markLoaded!: () => void;
  /** Resolves once the first watch has delivered the bucket's values as they were when it started. */
  readonly loaded = new Promise<void>((r) => (this.markLoaded = r)).then(() => {
    this.isLoaded = true;
  });
  isLoaded = false;
  private stopped = false;
  /** The running watch, while one runs. */
  private current?: { stop(): void };
  /** Since when a reader has waited on the watch without it delivering anything. */
  private behindSince: number | undefined;
  private lastReplace = 0;
  private wakeDelay?: () => void;
  /** Resolves when the mirror has stopped for good (stop(), or the connection closed). */
  readonly ended: Promise<void>;

  /** The bucket's status, from a request sent after the call; concurrent syncs share one (shared/nats/fresh.ts). */
  private readonly freshStatus: () => ReturnType<KV['status']>;

  private readonly kv: KV;
  private readonly apply: (e: KvWatchEntry) => void;
  private readonly o: KvMirrorOptions;
  constructor(kv: KV, apply: (e: KvWatchEntry) => void, o: KvMirrorOptions = {}) {
    this.kv = kv;
    this.apply = apply;
    this.o = o;
    this.freshStatus = freshRead(() => kv.status());
    this.ended = this.loop();
  }

  /** False once stopped, by `stop()` or because the connection closed. */
  get alive(): boolean {
    return !this.stopped;
  }

  /** Watch until stopped; a watch that ends or is replaced is started again. */
  private async loop() {
    while (!this.stopped) {
      let replaced = false;
      try {
        replaced = await this.watchOnce();
      } catch (err) {
        const name = (err as Error)?.name;
        // the connection is gone for good: nothing to watch any more
        if (name === 'ClosedConnectionError' || name === 'ConnectionDrainingError') break;
        this.o.log?.warn({ err }, 'kv mirror: watch failed; starting again');
      }
      if (this.stopped) break;
      if (!replaced) {
        await new Promise<void>((r) => {
          const timer = setTimeout(r, RESTART_DELAY_MS);
          this.wakeDelay = () => {
            clearTimeout(timer);
            r();
          };
        });
        this.wakeDelay = undefined;
      }
    }
    this.stopped = true;
    this.applied.wakeAll();
  }

  /** One watch, until it ends; true if it was ended by `replace()`. */
  private async watchOnce(): Promise<boolean> {
    const before = (await this.kv.status()).streamInfo.state.last_seq;
    const w = await this.kv.watch();
    let replaced = false;
    const handle = {
      stop: () => {
        replaced = true;
        w.stop();
      },
    };
    this.current = handle;
    this.behindSince = undefined;
    try {
      if (this.stopped) return false;
      // an empty bucket delivers nothing; otherwise the values the watch starts with arrive in stream
      // order and the last of them has delta 0. Once one at or past `before` (or one with delta 0)
      // has arrived, every sequence up to `before` has been delivered or had expired.
      if ((await this.kv.status()).values === 0) this.caughtUp(before);
      for await (const e of w) {
        this.behindSince = undefined;
        this.apply(e);
        if (e.delta === 0 || e.revision >= before) this.caughtUp(Math.max(e.revision, before));
      }
    } finally {
      if (this.current === handle) this.current = undefined;
      w.stop();
    }
    return replaced;
  }

  private caughtUp(seq: number) {
    this.markLoaded();
    this.applied.reach(seq);
  }

  /**
   * Wait (at most `maxWaitMs` in all) until the copy holds every write the stream holds now; false
   * if it does not by then (the caller answers from what has arrived). A watch that delivered
   * nothing for `stallMs` while readers waited on it is replaced, at most once per 10 s;
   * one that keeps delivering (a replay, a busy bucket) is left to catch up.
   */
  async sync(maxWaitMs = SYNC_WAIT_MS): Promise<boolean> {
    if (this.stopped) return false;
    const deadline = Date.now() + maxWaitMs;
    const status = await within(this.freshStatus(), Math.max(0, maxWaitMs), 'timeout' as const).catch(() => 'timeout' as const);
    if (status === 'timeout') return false; // the server is slow: not the watch's fault
    const { last_seq: last, messages } = status.streamInfo.state;
    // nothing stored (all expired): no message is left to wait for
    if (messages === 0) this.applied.reach(last);
    if (last <= this.applied.seq) return true;
    const stallMs = this.o.stallMs ?? 3000;
    this.behindSince ??= Date.now();
    for (;;) {
      const now = Date.now();
      const left = deadline - now;
      if (left <= 0 || this.stopped) return false;
      // wait for the watch, but no longer than it may stay silent before it counts as stalled
      const untilStall = (this.behindSince ?? now) + stallMs - now;
      if (await this.applied.reached(last, untilStall > 0 ? Math.min(left, untilStall) : left)) return true;
      if (this.behindSince === undefined)
        this.behindSince = Date.now(); // it delivered: keep waiting
      else if (Date.now() - this.behindSince >= stallMs) this.replace();
    }
  }

  /** Stop a stalled watch so the loop starts a fresh one at once. */
  private replace() {
    if (!this.current || Date.now() - this.lastReplace < REPLACE_EVERY_MS) return;
    this.lastReplace = Date.now();
    this.o.log?.warn('kv mirror: the watch delivers nothing while behind the stream; replacing it');
    this.current.stop();
    this.current = undefined;
    this.behindSince = Date.now(); // the fresh watch gets its own time to deliver
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.current?.stop();
    this.wakeDelay?.();
    await this.ended;
  }
}
