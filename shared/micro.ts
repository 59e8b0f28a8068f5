// Request/reply over NATS micro services. Errors travel as {error: {code, message, ...}} and are
// rebuilt on the caller's side as the same ApiError, so callers branch on the code. Every endpoint
// is declared with its schemas in shared/protocol/; a request the declaration refuses is answered
// bad_request without reaching the handler.
import { Svcm } from '@nats-io/services';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import type { Endpoint, ReplyOf, RequestOf, ServiceApi } from './protocol/endpoint.ts';
import type { NatsConnection, Msg } from '@nats-io/nats-core';
import { ApiError } from './errors.ts';
import { isTransientNatsError } from './nats/transient.ts';
import type { Logger } from './log.ts';

// biome-ignore lint/suspicious/noExplicitAny: each endpoint validates its request against its own schema before the handler reads it
export type Handler = (req: any, msg: Msg) => Promise<unknown> | unknown;

export interface ServiceDef {
  /** The declared service (shared/protocol/): its name, description and endpoints with their schemas. */
  api: ServiceApi;
  version: string;
  /** subject → handler, one per declared endpoint. The subject doubles as the endpoint name. */
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
  addEndpoint(
    name: string,
    opts: { subject: string; queue?: string; handler: (err: Error | null, msg: Msg) => void; metadata?: Record<string, string> },
  ): unknown;
  stop(): Promise<unknown>;
}

export async function addService(nc: NatsConnection, def: ServiceDef, log: Logger): Promise<RunningService> {
  const svcm = new Svcm(nc as never) as unknown as { add(cfg: object): Promise<MicroService> };
  const declared = new Map(def.api.endpoints.map((e) => [e.subject, e]));
  const undeclared = Object.keys(def.endpoints).filter((s) => !declared.has(s));
  const unserved = [...declared.keys()].filter((s) => !(s in def.endpoints));
  if (undeclared.length || unserved.length)
    throw new Error(
      `service ${def.api.service}: endpoints without a declaration (${undeclared.join(', ') || 'none'}) or declared and not served (${unserved.join(', ') || 'none'})`,
    );
  const name = def.api.service;
  const svc = await svcm.add({
    name,
    version: def.version,
    description: def.api.description,
    queue: def.queue ?? name,
    metadata: def.metadata,
  });
  for (const [subject, handler] of Object.entries(def.endpoints)) {
    const check = TypeCompiler.Compile(declared.get(subject)!.request);
    svc.addEndpoint(subject.replaceAll('.', '-'), {
      subject,
      handler: (err, msg) => {
        if (err) {
          log.error({ err, subject }, 'service endpoint error');
          return;
        }
        void (async () => {
          try {
            const req = parseRequest(msg, check);
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
  return {
    stop: async () => {
      await svc.stop();
    },
  };
}

/** The request as JSON, checked against its declaration; bad_request names the first violation. */
function parseRequest(
  msg: Msg,
  check: { Check(v: unknown): boolean; Errors(v: unknown): { First(): { path: string; message: string } | undefined } },
): unknown {
  let req: unknown;
  try {
    req = msg.data.length ? msg.json() : {};
  } catch {
    throw new ApiError('bad_request', 'the request is not JSON');
  }
  if (!check.Check(req)) {
    const first = check.Errors(req).First();
    throw new ApiError(
      'bad_request',
      `request${first?.path ? first.path.replaceAll('/', '.') : ''}: ${first?.message ?? 'does not match the schema'}`,
    );
  }
  return req;
}

/** Call a service endpoint; throws ApiError (`service_unavailable` when nobody answers). */
export async function call<T>(nc: NatsConnection, subject: string, payload: unknown, timeoutMs = 10000): Promise<T> {
  let msg: Msg;
  try {
    msg = await nc.request(subject, JSON.stringify(payload ?? {}), { timeout: timeoutMs });
  } catch (e) {
    const m = String((e as Error).message ?? e);
    if (/no responders|503/i.test(m) || (e as { code?: string }).code === '503')
      throw new ApiError('service_unavailable', `no instance answers ${subject}`);
    if (/timeout/i.test(m)) throw new ApiError('service_unavailable', `${subject} did not answer in ${timeoutMs} ms`);
    throw e;
  }
  const body = msg.json<{ ok?: T; error?: { code: string; message: string } }>();
  if (body.error) throw ApiError.fromJSON(body.error);
  return body.ok as T;
}

/** The typed caller of a declared endpoint: throws ApiError as the service answered it. `timeoutMs` overrides the declared wait. */
export const client =
  <E extends Endpoint>(e: E) =>
  (nc: NatsConnection, req: RequestOf<E>, timeoutMs = e.timeoutMs): Promise<ReplyOf<E>> =>
    call<ReplyOf<E>>(nc, e.subject, req, timeoutMs);
