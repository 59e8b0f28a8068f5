// Errors that mean "NATS cannot answer right now" rather than "this request is wrong": a request
// that timed out, nobody subscribed (a stream without a leader answers no API request), JetStream
// "temporarily unavailable" (10008, while a stream or consumer elects a leader). They come in
// failover windows (a NATS node lost, a cluster restarting) and pass within seconds.
import { JetStreamApiError } from '@nats-io/jetstream';

const TRANSIENT_NAMES = new Set(['TimeoutError', 'NoRespondersError', 'JetStreamNotEnabled']);
/** JetStream API error codes that mean "try again": 10008 temporarily unavailable. */
const TRANSIENT_CODES = new Set([10008]);

/** Whether `e` (or an error it wraps) is a passing unavailability of NATS or JetStream. */
export function isTransientNatsError(e: unknown): boolean {
  for (let cur = e, depth = 0; cur instanceof Error && depth < 5; cur = cur.cause, depth++) {
    if (TRANSIENT_NAMES.has(cur.name)) return true;
    if (cur instanceof JetStreamApiError && (TRANSIENT_CODES.has(cur.code) || cur.status === 503)) return true;
    if (cur.name === 'RequestError' && /no responders|timeout/i.test(cur.message)) return true;
  }
  return false;
}
