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
    const clear = () => { if (inFlight === p) inFlight = null; };
    p.then(clear, clear);
    return p;
  };
  return () => {
    // a `next` not yet sent (it clears itself as it is sent) is sent after this call: join it
    if (next) return next;
    if (!inFlight) return start();
    {
      const after = inFlight.then(() => {}, () => {});
      next = after.then(() => {
        next = null;
        return start();
      });
    }
    return next;
  };
}
