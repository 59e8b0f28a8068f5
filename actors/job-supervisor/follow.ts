// One stream the supervisor's projection (projection.ts) follows from its checkpoint until stopped:
// the `jobs` bucket through a KV watch, the archive through a consumer. A subscription that ends or
// fails is opened again from the checkpoint a second later. Until the follower has reached the end
// it had to reach, no reader's sync() gets as far as its stall check (it answers "being rebuilt"
// first), so a subscription that stopped delivering (an ordered consumer that missed its heartbeats
// and did not come back: seen on a 3-node cluster under load, a rebuild stuck at 87,719 of 100,000
// for 10 minutes) would wait for ever: a watchdog stops it, and the loop opens another.
import type { Logger } from '../../shared/log.ts';

/** Messages until stopped (a KV watch, a consumer's messages). */
export interface Subscription<T> extends AsyncIterable<T> {
  stop(): void;
}

export interface FollowOptions<T> {
  /** Subscribe from the checkpoint (again after each subscription that ended or failed). */
  open(): Promise<Subscription<T>>;
  /** Take one message; a promise returned is awaited before the next (a pause between batches). */
  take(m: T): Promise<void> | void;
  /** After a subscription ended or failed (not when the connection closed), before the next one. */
  between?(): void;
  /** The projection is stopping: open nothing more. */
  stopped(): boolean;
  /** A stall no longer matters to the watchdog (the end to reach was reached). */
  done(): boolean;
  /** How long a subscription may deliver nothing before the watchdog stops it. */
  stallMs: number;
  /** The checkpoint, for the stall's log line. */
  applied(): number;
  log: Logger;
  /** Log lines: a subscription the watchdog stopped; one that failed. */
  stalledMsg: string;
  failedMsg: string;
}

export class Follower<T> {
  private current?: Subscription<T>;
  private lastDelivery = Date.now();
  private readonly o: FollowOptions<T>;
  constructor(o: FollowOptions<T>) {
    this.o = o;
  }

  /** Stop the current subscription: the loop opens another from the checkpoint (or ends, when stopped). */
  stopCurrent(): void {
    this.current?.stop();
  }

  /** stopCurrent() if the current subscription delivered nothing for longer than `ms`. */
  restartIfSilent(ms: number): void {
    if (Date.now() - this.lastDelivery > ms) this.current?.stop();
  }

  /** Follow until stopped (or the connection closes). */
  async run(): Promise<void> {
    const { stallMs } = this.o;
    const watchdog = setInterval(
      () => {
        if (this.o.done() || !this.current || Date.now() - this.lastDelivery <= stallMs) return;
        this.o.log.warn({ applied: this.o.applied(), silentMs: Date.now() - this.lastDelivery }, this.o.stalledMsg);
        this.current.stop();
      },
      Math.max(50, Math.min(1000, stallMs / 4)),
    );
    watchdog.unref();
    while (!this.o.stopped()) {
      try {
        const sub = await this.o.open();
        this.current = sub;
        this.lastDelivery = Date.now();
        if (this.o.stopped()) {
          sub.stop();
          break;
        }
        for await (const m of sub) {
          this.lastDelivery = Date.now();
          const pause = this.o.take(m);
          if (pause) await pause;
        }
      } catch (err) {
        const name = (err as Error)?.name;
        if (name === 'ClosedConnectionError' || name === 'ConnectionDrainingError') break;
        this.o.log.warn({ err }, this.o.failedMsg);
      }
      this.current = undefined;
      this.o.between?.();
      if (!this.o.stopped()) await new Promise((r) => setTimeout(r, 1000));
    }
    clearInterval(watchdog);
  }
}
