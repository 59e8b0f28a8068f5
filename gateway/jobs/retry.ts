// A job creation that failed because NATS was failing over, asked again inside the gateway before a
// 503 reaches the client (issue 45). Safe to repeat, with the same job id, only where nothing of the
// creation is left half done:
// - a transient NATS error thrown out of submitJob: every step after the charge handles its own
//   errors (create.ts), so it came from a step before it, and nothing was charged;
// - the charge unanswered (`the wallet did not answer`): the charge may have been written, and the
//   next try's charge of the same job id (`charge:<jobId>`, at most once per wallet) finds it and
//   goes on with it: one charge, one job. The whole retry stays far inside the orphan sweep's grace
//   (jobMayAppearMs), so the sweep never refunds a charge whose job a retry is still writing;
//   Not for a job that may carry the one-time dataset fee (labs): the next try may lose the wallet's
//   mark to a concurrent job and plan a lower cost than the charge already written;
// - no job-supervisor answered its ping (the ping is lost in a failover as often as a supervisor is).
// Never retried: an answer that names a job id (it may exist, or its charge was refunded), a late
// charge refunded, any 4xx.
import { ApiError } from '../../shared/errors.ts';
import { isTransientNatsError, retryTransient } from '../../shared/nats/transient.ts';

/** A new try is started only this long after the first: the creation's own deadline. */
export const CREATE_RETRY_MS = 15_000;

const UNANSWERED_CHARGE = /^the wallet did not answer/;
const NO_SUPERVISOR = /^no job-supervisor instance is running/;

/** Whether a failed try of a creation may be tried again with the same job id; `chargeAgain`: the job's cost cannot change between tries. */
export function retriableCreation(e: unknown, chargeAgain = true): boolean {
  if (isTransientNatsError(e)) return true;
  if (!(e instanceof ApiError) || e.code !== 'service_unavailable' || e.details?.jobId) return false;
  return NO_SUPERVISOR.test(e.message) || (chargeAgain && UNANSWERED_CHARGE.test(e.message));
}

/** `create` (one try of a creation with a fixed job id) again while it fails retriably, within CREATE_RETRY_MS; stops when the client left. */
export function retryCreation<T>(create: () => Promise<T>, o: { signal?: AbortSignal; chargeAgain?: boolean } = {}): Promise<T> {
  return retryTransient(create, CREATE_RETRY_MS, (e) => !o.signal?.aborted && retriableCreation(e, o.chargeAgain));
}
