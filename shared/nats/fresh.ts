// "As of now" reads shared by concurrent callers. A reader that must see every write acknowledged
// before it asks the server for the stream's last sequence (a stream-info request) and waits for
// its copy to reach it. Under load, one such request per reader is most of the cost of a read;
// callers arriving together can share one, as long as it was sent after each of them arrived (one
// sent earlier may have been answered before a write the caller already saw acknowledged). So:
// none in flight, one is sent now; one in flight, the callers arriving meanwhile share the next,
// sent as soon as it is answered. A read waits at most two round trips; the server sees at most
// one request in flight per process however many readers there are.

/** A function answering with the result of a `fetch` started after it was called. */
export function freshRead<T>(fetch: () => Promise<T>): () => Promise<T> {
  let inFlight: Promise<unknown> | null = null;
  let next: Promise<T> | null = null;
  const start = (): Promise<T> => {
    const p = fetch();
    inFlight = p;
    const clear = () => {
      if (inFlight === p) inFlight = null;
    };
    p.then(clear, clear);
    return p;
  };
  return () => {
    // a `next` not yet sent (it clears itself as it is sent) is sent after this call: join it
    if (next) return next;
    if (!inFlight) return start();
    {
      const after = inFlight.then(
        () => {},
        () => {},
      );
      next = after.then(() => {
        next = null;
        return start();
      });
    }
    return next;
  };
}

/**
 * How far a copy that follows a stream has applied it (every sequence up to `seq` applied, or gone
 * from the stream), and the readers waiting for it to reach a sequence: the other half of an "as
 * of now" read, after the stream's last sequence was asked (gateway/balances.ts, kv-mirror.ts).
 */
export class AppliedUpTo {
  private waiters = new Set<{ seq: number; wake: () => void }>();

  public seq: number;
  constructor(seq: number) {
    this.seq = seq;
  }

  /** Every sequence up to `seq` is applied; wakes the readers waiting for it. Never moves back. */
  reach(seq: number) {
    if (seq <= this.seq) return;
    this.seq = seq;
    for (const w of this.waiters)
      if (w.seq <= seq) {
        this.waiters.delete(w);
        w.wake();
      }
  }

  /** Start again at `seq` (a new consumer, nothing of the old one kept): every waiting reader looks again. */
  reset(seq: number) {
    this.seq = seq;
    this.wakeAll();
  }

  /** Wake every waiting reader (the copy stopped or restarts); each sees whether its sequence is reached. */
  wakeAll() {
    for (const w of this.waiters) w.wake();
    this.waiters.clear();
  }

  /** Whether `seq` is reached within `ms`; false at once when woken without it (a restart). */
  async reached(seq: number, ms: number): Promise<boolean> {
    if (seq <= this.seq) return true;
    let waiter!: { seq: number; wake: () => void };
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((r) => {
      waiter = { seq, wake: r };
      this.waiters.add(waiter);
      timer = setTimeout(r, Math.max(0, ms));
    });
    clearTimeout(timer);
    this.waiters.delete(waiter);
    return seq <= this.seq;
  }
}
