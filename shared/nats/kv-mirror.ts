// A process's live copy of a KV bucket, fed by one watch, that can answer "as of now".
//
// A watch alone lags the writes by a moment: a reader answering from it could miss a write that was
// acknowledged just before the read (an instance that advertised, a job just created). `sync()`
// closes that gap: it asks the stream for its last sequence (a stream-info request, no consumer)
// and waits until the watch has delivered up to it. A watch that lost its server-side consumer (the
// ordered consumer resets only after about a minute of missed heartbeats) or that ended is replaced
// by a fresh one, which delivers every key's last value again; `apply` must be idempotent.
import type { KV, KvWatchEntry } from '@nats-io/kv';
import type { Logger } from '../log.ts';

export interface KvMirrorOptions {
  /** How long `sync()` waits for the watch; after two slow syncs in a row the watch is replaced. */
  syncWaitMs?: number;
  /** Pause before a watch that ended (connection closed, an error) is started again. */
  restartDelayMs?: number;
  log?: Logger;
}

export class KvMirror {
  /** Every stream sequence up to this one has been applied (or was gone before the watch saw it). */
  private applied = 0;
  private waiters = new Set<{ seq: number; wake: () => void }>();
  private markLoaded!: () => void;
  /** Resolves once the first watch has delivered the bucket's values as they were when it started. */
  readonly loaded = new Promise<void>((r) => (this.markLoaded = r)).then(() => { this.isLoaded = true; });
  isLoaded = false;
  private stopped = false;
  private current?: { stop(): void };
  private slowSyncs = 0;
  private replacing = false;
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly kv: KV, private readonly apply: (e: KvWatchEntry) => void, private readonly o: KvMirrorOptions = {}) {
    this.running = this.loop();
  }

  /** False once stopped, by `stop()` or because the connection closed. */
  get alive(): boolean {
    return !this.stopped;
  }

  /** Watch until stopped; a watch that ends or is dropped as stuck is started again. */
  private async loop() {
    while (!this.stopped) {
      try {
        await this.watchOnce();
      } catch (err) {
        const name = (err as Error)?.name;
        // the connection is gone for good: nothing to watch any more
        if (name === 'ClosedConnectionError' || name === 'ConnectionDrainingError') break;
        this.o.log?.warn({ err }, 'kv mirror: watch failed; starting again');
      }
      if (this.stopped) break;
      if (this.replacing) this.replacing = false;
      else await new Promise((r) => setTimeout(r, this.o.restartDelayMs ?? 1000).unref());
    }
    this.stopped = true;
    for (const w of this.waiters) w.wake();
    this.waiters.clear();
  }

  private async watchOnce() {
    const before = (await this.kv.status()).streamInfo.state.last_seq;
    const w = await this.kv.watch();
    this.current = w;
    try {
      if (this.stopped) return;
      // an empty bucket delivers nothing; otherwise the values the watch starts with arrive in stream
      // order and the last of them has delta 0. Once one at or past `before` (or one with delta 0)
      // has arrived, every sequence up to `before` has been delivered or had expired.
      if ((await this.kv.status()).values === 0) this.reach(before, true);
      for await (const e of w) {
        this.apply(e);
        const caughtUp = e.delta === 0 || e.revision >= before;
        this.reach(caughtUp ? Math.max(e.revision, before) : e.revision, caughtUp);
      }
    } finally {
      w.stop();
    }
  }

  private reach(seq: number, loaded: boolean) {
    if (loaded) this.markLoaded();
    if (seq <= this.applied) return;
    this.applied = seq;
    for (const w of this.waiters) if (w.seq <= seq) { this.waiters.delete(w); w.wake(); }
  }

  /**
   * Wait until the copy holds every write the stream holds now; false if that took over the wait
   * (the caller then answers from what has arrived). The second slow sync in a row replaces the
   * watch and waits once more, for the fresh one.
   */
  async sync(maxWaitMs = this.o.syncWaitMs ?? 2000): Promise<boolean> {
    if (this.stopped) return false;
    const status = await within(this.kv.status(), maxWaitMs).catch(() => 'timeout' as const);
    let synced = false;
    let last = 0;
    if (status !== 'timeout') {
      const state = status.streamInfo.state;
      last = state.last_seq;
      // nothing stored (all expired): no message is left to wait for
      if (state.messages === 0) this.reach(last, false);
      synced = await this.reached(last, maxWaitMs);
    }
    this.slowSyncs = synced ? 0 : this.slowSyncs + 1;
    if (this.slowSyncs >= 2 && !this.stopped) {
      this.slowSyncs = 0;
      this.o.log?.warn('kv mirror: the watch lags; replacing it');
      this.replacing = true;
      this.current?.stop(); // the loop starts a fresh watch at once
      if (last) synced = await this.reached(last, maxWaitMs);
    }
    return synced;
  }

  /** Whether the copy reaches `seq` within `ms`. */
  private async reached(seq: number, ms: number): Promise<boolean> {
    if (seq <= this.applied) return true;
    let waiter!: { seq: number; wake: () => void };
    const p = new Promise<true>((r) => { waiter = { seq, wake: () => r(true) }; });
    this.waiters.add(waiter);
    const ok = (await within(p, ms)) === true;
    this.waiters.delete(waiter);
    return ok && seq <= this.applied;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.current?.stop();
    await this.running;
  }
}

/** `p`, or 'timeout' after `ms`. */
function within<T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<'timeout'>((r) => { timer = setTimeout(r, Math.max(0, ms), 'timeout'); })]).finally(() => clearTimeout(timer));
}
