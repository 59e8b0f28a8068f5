// Request/reply over NATS micro services. Errors travel as {error: {code, message, ...}} and are
// rebuilt on the caller's side as the same ApiError, so callers branch on the code.
import { Svcm } from '@nats-io/services';
import type { NatsConnection, Msg } from '@nats-io/nats-core';
import { ApiError } from './errors.ts';
import { isTransientNatsError } from './nats/transient.ts';
import type { Logger } from './log.ts';

export type Handler = (req: any, msg: Msg) => Promise<unknown> | unknown;

export interface ServiceDef {
  name: string;
  version: string;
  description: string;
  /** subject → handler. The subject doubles as the endpoint name. */
  endpoints: Record<string, Handler>;
  /** Queue group; default: the service name (instances share the work). */
  queue?: string;
  metadata?: Record<string, string>;
}

export interface RunningService {
  stop(): Promise<void>;
}

// @nats-io/services pins an older nats-core; at run time it works with 3.4, the types do not agree.
interface MicroService {
  addEndpoint(name: string, opts: { subject: string; queue?: string; handler: (err: Error | null, msg: Msg) => void; metadata?: Record<string, string> }): unknown;
  stop(): Promise<unknown>;
}

export async function addService(nc: NatsConnection, def: ServiceDef, log: Logger): Promise<RunningService> {
  const svcm = new Svcm(nc as never) as unknown as { add(cfg: object): Promise<MicroService> };
  const svc = await svcm.add({ name: def.name, version: def.version, description: def.description, queue: def.queue ?? def.name, metadata: def.metadata });
  for (const [subject, handler] of Object.entries(def.endpoints)) {
    svc.addEndpoint(subject.replaceAll('.', '-'), {
      subject,
      handler: (err, msg) => {
        if (err) {
          log.error({ err, subject }, 'service endpoint error');
          return;
        }
        void (async () => {
          try {
            const req = msg.data.length ? msg.json() : {};
            const out = await handler(req, msg);
            msg.respond(JSON.stringify({ ok: out ?? null }));
          } catch (e) {
            let apiErr: ApiError;
            if (e instanceof ApiError) apiErr = e;
            else if (isTransientNatsError(e)) {
              // the handler's own NATS step met a failover: a passing outage, not a bug. (A write that
              // timed out may still have happened: callers treat the answer as "unknown", as a timeout.)
              log.warn({ err: e, subject }, 'service handler: NATS did not answer');
              apiErr = new ApiError('service_unavailable', `${subject}: the message system did not answer (failing over)`);
            } else {
              log.error({ err: e, subject }, 'service handler failed');
              apiErr = new ApiError('internal', (e as Error).message);
            }
            msg.respond(JSON.stringify({ error: apiErr.toJSON() }));
          }
        })();
      },
    });
  }
  // the endpoints' subscriptions must reach the server before anyone is told we are up
  await nc.flush();
  return { stop: async () => { await svc.stop(); } };
}

/** Call a service endpoint; throws ApiError (`service_unavailable` when nobody answers). */
export async function call<T>(nc: NatsConnection, subject: string, payload: unknown, timeoutMs = 10000): Promise<T> {
  let msg: Msg;
  try {
    msg = await nc.request(subject, JSON.stringify(payload ?? {}), { timeout: timeoutMs });
  } catch (e) {
    const m = String((e as Error).message ?? e);
    if (/no responders|503/i.test(m) || (e as { code?: string }).code === '503') throw new ApiError('service_unavailable', `no instance answers ${subject}`);
    if (/timeout/i.test(m)) throw new ApiError('service_unavailable', `${subject} did not answer in ${timeoutMs} ms`);
    throw e;
  }
  const body = msg.json<{ ok?: T; error?: { code: string; message: string } }>();
  if (body.error) throw ApiError.fromJSON(body.error);
  return body.ok as T;
}
