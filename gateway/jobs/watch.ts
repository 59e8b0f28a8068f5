// One watch of the whole `jobs` bucket per gateway, shared by every long poll (?wait=) and every
// event stream (GET /v1/jobs/{id}/events, events.ts): each registers for its job's key instead of
// making a watch (a JetStream consumer, created and deleted) of its own, so open streams cost the
// server no consumer each. Wakes on the supervisor's write, whichever supervisor or gateway wrote.
// When the shared watch cannot be made or breaks (a failover), the polls read their job now and
// then (wait.ts) and the watch is made again on a later poll.
import type { KV } from '@nats-io/kv';
import { KvWatchInclude } from '@nats-io/kv';
import type { Logger } from '../../shared/log.ts';
import { isFinished, type JobRecord } from '../../shared/protocol/jobs.ts';
import { decodeJob, readJob } from '../../shared/jobs/store.ts';
import { pollJob } from './wait.ts';

/** How long a finished job seen by the watch is remembered: covers a poll that registers just after its write went by. */
const FINISHED_KEPT_MS = 30_000;
/** The shortest time between two attempts to make the watch again after it failed. */
const RESTART_MS = 1000;

/** null: the watch broke. `revision`: the write's revision in the bucket. */
type Waiter = (job: JobRecord | null, revision?: number) => void;

export class JobWatch {
  private readonly waiters = new Map<string, Set<Waiter>>();
  /** Finished jobs the watch delivered lately, by id, with when they came. */
  private readonly finished = new Map<string, { job: JobRecord; at: number }>();
  private live = false;
  private starting: Promise<boolean> | null = null;
  private lastTry = 0;
  private stopped = false;
  private watch: { stop(): void } | null = null;
  /** How many times the shared watch was made (for tests and the log). */
  started = 0;

  private readonly kv: KV;
  private readonly log?: Logger;
  constructor(kv: KV, log?: Logger) {
    this.kv = kv;
    this.log = log;
  }

  /** The watch running, made now if needed; false when it cannot be made (then polls read). */
  private ensure(): Promise<boolean> {
    if (this.live) return Promise.resolve(true);
    if (this.starting) return this.starting;
    if (this.stopped || Date.now() - this.lastTry < RESTART_MS) return Promise.resolve(false);
    this.lastTry = Date.now();
    this.starting = (async () => {
      try {
        const w = await this.kv.watch({ key: '>', include: KvWatchInclude.UpdatesOnly });
        if (this.stopped) {
          w.stop();
          return false;
        }
        this.watch = w;
        this.live = true;
        this.started++;
        void this.follow(w);
        return true;
      } catch (err) {
        this.log?.warn({ err }, 'jobs watch not made; long polls read instead');
        return false;
      } finally {
        this.starting = null;
      }
    })();
    return this.starting;
  }

  private async follow(w: AsyncIterable<{ key: string; operation: string; value: Uint8Array; revision: number; json<T>(): T }>) {
    try {
      for await (const e of w) {
        if (e.operation !== 'PUT' || !e.value.length) continue;
        const set = this.waiters.get(e.key);
        let job: JobRecord;
        try {
          job = decodeJob(e.value);
        } catch {
          continue;
        }
        if (isFinished(job)) this.remember(job);
        if (set) for (const wake of set) wake(job, e.revision);
      }
    } catch (err) {
      if (!this.stopped) this.log?.warn({ err }, 'jobs watch broke; long polls read until it is made again');
    }
    this.live = false;
    this.watch = null;
    // every poll waiting now goes on by reading
    for (const set of this.waiters.values()) for (const wake of set) wake(null);
  }

  private remember(job: JobRecord) {
    const now = Date.now();
    this.finished.set(job.id, { job, at: now });
    // prune from the oldest (insertion order) while past their time
    for (const [id, f] of this.finished) {
      if (now - f.at <= FINISHED_KEPT_MS) break;
      this.finished.delete(id);
    }
  }

  /**
   * Hold until the job is finished, the time is up or the client goes away; the newest record
   * seen (`current` if nothing newer came). Never throws: a job creation that waits has charged
   * already, so a failing watch must not turn its answer into an error (the client would create the
   * job again).
   */
  async wait(current: JobRecord, waitMs: number, signal?: AbortSignal): Promise<JobRecord> {
    if (isFinished(current) || waitMs <= 0 || signal?.aborted) return current;
    const deadline = Date.now() + waitMs;
    const wasLive = this.live;
    if (!(await this.ensure())) return pollJob(this.kv, current, deadline, signal);
    let latest = current;
    let broken = false;
    let wake!: () => void;
    const woken = new Promise<void>((r) => {
      wake = r;
    });
    const waiter: Waiter = (job) => {
      if (!job) broken = true;
      else latest = job;
      if (!job || isFinished(job)) wake();
    };
    let set = this.waiters.get(current.id);
    if (!set) this.waiters.set(current.id, (set = new Set()));
    set.add(waiter);
    const timer = setTimeout(wake, Math.max(0, deadline - Date.now()));
    signal?.addEventListener('abort', wake, { once: true });
    try {
      // a finish the watch delivered before this poll registered
      const seen = this.finished.get(current.id);
      if (seen) return seen.job;
      // a watch made just now starts with the writes after it: one read covers a write between
      // the caller's read and that start
      if (!wasLive) {
        const again = await readJob(this.kv, current.id).catch(() => null);
        if (again && isFinished(again.job)) return again.job;
        // the watch may have brought a newer record (the finish, even) while this read was out:
        // the read's older one must not replace it
        if (again && latest === current) latest = again.job;
      }
      await woken;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', wake);
      set.delete(waiter);
      if (!set.size) this.waiters.delete(current.id);
    }
    if (isFinished(latest) || signal?.aborted) return latest;
    if (broken) return pollJob(this.kv, latest, deadline, signal);
    return latest;
  }

  /**
   * Every write of the job's document from now on, to `cb`, and `null` once if the watch breaks
   * (then nothing more comes: the caller reads instead). Null when no watch can be made now. The
   * returned function ends the registration.
   */
  async subscribe(id: string, cb: Waiter): Promise<(() => void) | null> {
    if (!(await this.ensure())) return null;
    let set = this.waiters.get(id);
    if (!set) this.waiters.set(id, (set = new Set()));
    const mine = set;
    mine.add(cb);
    return () => {
      mine.delete(cb);
      if (!mine.size && this.waiters.get(id) === mine) this.waiters.delete(id);
    };
  }

  stop() {
    this.stopped = true;
    this.watch?.stop();
  }
}

const shared = new WeakMap<KV, JobWatch>();

/** The one shared watch of this `jobs` bucket handle (made on its first long poll). */
export function jobWatchOf(kv: KV, log?: Logger): JobWatch {
  let w = shared.get(kv);
  if (!w) shared.set(kv, (w = new JobWatch(kv, log)));
  return w;
}
