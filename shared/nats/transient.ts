// Errors that mean "NATS cannot answer right now" rather than "this request is wrong". They come in
// failover windows (a NATS node lost, a cluster restarting) and pass within seconds:
// - nobody took the request: no responders (a stream without a leader has no subscriber on its
//   subjects), or JetStream's "temporarily unavailable" (10008, while a stream or consumer elects
//   a leader). The request had no effect.
// - a timeout: the request went out and no answer came. It may have had its effect (a write stored
//   by a leader that died before answering).
// JetStream-not-enabled-for-the-account (10039), a full stream, a refused request: answers, not outages.
import { JetStreamApiError } from '@nats-io/jetstream';

/** JetStream API error codes that mean "try again": 10008 temporarily unavailable. */
const TRANSIENT_CODES = new Set([10008]);

export type TransientKind = 'unanswered' | 'timeout';

/** How `e` (or an error it wraps) is a passing unavailability of NATS; null if it is not one. */
export function transientKind(e: unknown): TransientKind | null {
  for (let cur = e, depth = 0; cur instanceof Error && depth < 5; cur = cur.cause, depth++) {
    if (cur.name === 'TimeoutError') return 'timeout';
    if (cur.name === 'NoResponders') return 'unanswered';
    if (cur instanceof JetStreamApiError) return TRANSIENT_CODES.has(cur.code) ? 'unanswered' : null;
    // the client wraps these (RequestError, JetStreamNotEnabled): their cause decides
  }
  return null;
}

/** Whether `e` is a passing unavailability of NATS (see transientKind). */
export const isTransientNatsError = (e: unknown): boolean => transientKind(e) !== null;

/**
 * `f` again while it fails with a passing unavailability (or `retryIf` says so), pausing 100 ms
 * doubling to 1 s, for at most `budgetMs`: a request asked again 1-2 s later (after the connection
 * moved off a cut-off server, or a stream elected its leader) is served, where the first failure
 * would have been a 503 (issue 45). Only for operations that are safe to repeat.
 */
export async function retryTransient<T>(
  f: () => Promise<T>,
  budgetMs: number,
  retryIf: (e: unknown) => boolean = isTransientNatsError,
): Promise<T> {
  const end = Date.now() + budgetMs;
  for (let wait = 100; ; wait = Math.min(wait * 2, 1000)) {
    try {
      return await f();
    } catch (e) {
      if (!retryIf(e) || Date.now() + wait > end) throw e;
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
