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
// - no job-supervisor answered its ping, or the catalogue shows no worker of the service (both are
//   checked before the charge; a worker's entry lapses while its NATS node is cut off, and comes
//   back within seconds of the heal).
// Never retried: an answer that names a job id (it may exist, or its charge was refunded), a late
// charge refunded, any 4xx.
import { ApiError } from '../../shared/errors.ts';
import { isTransientNatsError, retryTransient } from '../../shared/nats/transient.ts';

/**
 * A new try is started only this long after the first: the creation's own deadline. A stream's
 * leader election took 10-15 s on the shared 2-core machine (partition runs), and a cut-off meta
 * leader answers as if nothing happened for ~15 s (issue 45's note): 20 s rides both out. Far
 * inside the orphan sweep's grace (120 s; a charge's job must appear within half of it).
 */
export const CREATE_RETRY_MS = 20_000; // server.failoverRetryMs's default

const UNANSWERED_CHARGE = /^the wallet did not answer/;
const NO_INSTANCE = /^no [\w-]+ instance is running/;

/** Whether a failed try of a creation may be tried again with the same job id; `chargeAgain`: the job's cost cannot change between tries. */
export function retriableCreation(e: unknown, chargeAgain = true): boolean {
  if (isTransientNatsError(e)) return true;
  if (!(e instanceof ApiError) || e.code !== 'service_unavailable' || e.details?.jobId) return false;
  return NO_INSTANCE.test(e.message) || (chargeAgain && UNANSWERED_CHARGE.test(e.message));
}

/** `create` (one try of a creation with a fixed job id) again while it fails retriably, within CREATE_RETRY_MS; stops when the client left. */
export function retryCreation<T>(
  create: () => Promise<T>,
  o: { signal?: AbortSignal; chargeAgain?: boolean; budgetMs?: number } = {},
): Promise<T> {
  return retryTransient(create, o.budgetMs ?? CREATE_RETRY_MS, (e) => !o.signal?.aborted && retriableCreation(e, o.chargeAgain));
}
