// The two baselines of the gateway benchmark, each run as its own process like the gateway:
//   node --import tsx bench/lib/baseline-server.ts uws  <captures.json>
//   node --import tsx bench/lib/baseline-server.ts node
// It prints `listening <port>` once it accepts connections.
//
// uws:  a bare uWebSockets.js handler (the same native build the gateway loads) that answers each
//       benchmarked path with the bytes the real gateway answered (status, content type, body),
//       doing no work at all: the limit of the stack.
// node: a plain node:http server doing the work the gateway does for these routes, with the same
//       code: the same route handlers from gateway/routes, the same Ajv options and TypeBox schemas,
//       the same auth step (gateway/pipeline/auth.ts: key lookup with its 30 s cache), the same limit
//       step (gateway/pipeline/limit.ts: LocalLimiter in memory per key or address, the shared
//       `limits` bucket only for job creation), the same NATS reads (balances from the ledger as of
//       now, gateway/balances.ts; the catalogue copy), and the same precomputed bytes for
//       `fixedAnswer` routes (/v1, /v1/pricing, /v1/services; rebuilt on the same catalogue
//       changes), so a public GET is the limit, the request id and the write here too. It leaves out
//       what is not work on the request: Prometheus metrics, the access log (off at warn level in
//       the gateway too), OPTIONS/405 handling.
import { createServer, type IncomingMessage } from 'node:http';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Kvm } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { loadNativeUws } from '../../gateway/uws.ts';
import { allRoutes } from '../../gateway/routes/index.ts';
import { createMetrics } from '../../gateway/metrics.ts';
import type { GatewayContext, RateLimit, Route, RouteRequest } from '../../gateway/route.ts';
import { createAuth } from '../../gateway/pipeline/auth.ts';
import { createClientAddress } from '../../gateway/pipeline/address.ts';
import { createLimit, rateLimitOf } from '../../gateway/pipeline/limit.ts';
import { statusLine } from '../../gateway/http.ts';
import { buildFixedAnswer, type FixedAnswer } from '../../gateway/pipeline/fixed.ts';
import { ApiError } from '../../shared/errors.ts';
import { COMPONENTS } from '../../shared/schemas/api.ts';
import { BUCKETS } from '../../shared/names.ts';
import { loadConfig } from '../../shared/config/index.ts';
import { connectNats } from '../../shared/nats/connect.ts';
import { createLogger } from '../../shared/log.ts';

/** One answer of the real gateway, replayed by the bare uWS baseline. */
export interface Capture {
  method: string;
  path: string;
  status: number;
  contentType: string;
  body: string;
}

const COMMON = { 'access-control-allow-origin': '*', 'access-control-expose-headers': 'x-request-id, retry-after, content-disposition' };

function bareUws(captures: Capture[]) {
  const { uws } = loadNativeUws();
  const app = uws.App();
  for (const c of captures) {
    const status = statusLine(c.status);
    const handler = (res: import('uWebSockets.js').HttpResponse) => {
      // a POST must still read (and drop) its body, or the connection stalls
      let answered = false;
      const answer = () => {
        if (answered) return;
        answered = true;
        res.cork(() => {
          res.writeStatus(status);
          res.writeHeader('x-request-id', randomUUID());
          for (const [k, v] of Object.entries(COMMON)) res.writeHeader(k, v);
          res.writeHeader('content-type', c.contentType);
          res.end(c.body);
        });
      };
      res.onAborted(() => {
        answered = true;
      });
      if (c.method === 'POST')
        res.onData((_chunk, last) => {
          if (last) answer();
        });
      else answer();
    };
    if (c.method === 'POST') app.post(c.path, handler);
    else app.get(c.path, handler);
  }
  app.listen('127.0.0.1', 0, (s) => {
    if (!s) throw new Error('bare uWS: cannot listen');
    process.stdout.write(`listening ${uws.us_socket_local_port(s)}\n`);
  });
}

async function plainNode() {
  const config = loadConfig();
  const nc = await connectNats(config.nats.url, 'bench-node-baseline');
  const kvm = new Kvm(nc);
  const open = (b: string) => kvm.open(b);
  const ctx: GatewayContext = {
    nc,
    js: jetstream(nc),
    config,
    log: createLogger('bench-node-baseline', 'warn'),
    baseUrl: 'http://localhost',
    accountUrl: 'http://localhost/account',
    docsUrl: 'http://localhost/docs/errors',
    kv: {
      keys: await open(BUCKETS.keys),
      jobs: await open(BUCKETS.jobs),
      catalogue: await open(BUCKETS.catalogue),
      limits: await open(BUCKETS.limits),
      datasets: await open(BUCKETS.datasets),
      topups: await open(BUCKETS.topups),
    },
  };
  // the same Ajv set-up as gateway/server.ts (bodies: no coercion; defaults applied)
  const ajv = new Ajv({ allErrors: false, coerceTypes: false, useDefaults: true, strict: false });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  for (const s of COMPONENTS) ajv.addSchema(s);
  const routes = new Map<string, { route: Route; rateLimit: RateLimit; body?: ValidateFunction; fixed?: FixedAnswer }>();
  for (const route of allRoutes({ metrics: createMetrics(), isReady: () => true })) {
    if (route.path.includes(':')) continue; // the benchmarked paths have no parameters
    const entry: { route: Route; rateLimit: RateLimit; body?: ValidateFunction; fixed?: FixedAnswer } = {
      route,
      rateLimit: rateLimitOf(route),
      ...(route.body ? { body: ajv.compile(route.body) } : {}),
    };
    routes.set(`${route.method} ${route.path}`, entry);
    // a fixed answer is built as the gateway builds it (and rebuilt on the same changes), so a GET
    // does the gateway's work: the limit, the request id and the write
    if (route.fixedAnswer) {
      const build = () =>
        buildFixedAnswer(route, ctx).then(
          (a) => {
            entry.fixed = a;
          },
          () => {
            entry.fixed = undefined;
          },
        );
      await build();
      if (typeof route.fixedAnswer === 'object') route.fixedAnswer.follows(ctx, () => void build());
    }
  }
  // the gateway's own auth and limit steps, so both servers do the same work per request
  const authenticate = createAuth(ctx.kv.keys);
  const { limit } = createLimit(config, ctx.kv.limits);
  // as gateway/server.ts: X-Forwarded-For only from trusted proxies, per-address limits by group
  const addressOf = createClientAddress(config.server);
  const clientIp = (req: IncomingMessage) => {
    const xff = req.headers['x-forwarded-for'];
    return addressOf(req.socket.remoteAddress ?? '', typeof xff === 'string' ? xff : undefined).group;
  };
  const readBody = (req: IncomingMessage, max: number) =>
    new Promise<Buffer>((resolve, reject) => {
      const parts: Buffer[] = [];
      let size = 0;
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size > max) {
          reject(new ApiError('payload_too_large'));
          req.destroy();
          return;
        }
        parts.push(c);
      });
      req.on('end', () => resolve(Buffer.concat(parts, size)));
      req.on('error', reject);
    });

  const server = createServer(async (req, res) => {
    const requestId = randomUUID();
    const headers = { ...COMMON, 'x-request-id': requestId, 'content-type': 'application/json' };
    try {
      const path = (req.url ?? '/').split('?')[0]!;
      const hit = routes.get(`${req.method} ${path}`);
      if (!hit) throw new ApiError('not_found', `no such path: ${path}`);
      const { route } = hit;
      if (hit.fixed && req.method === 'GET') {
        // biome-ignore lint/nursery/noFloatingPromises: a fixed answer's limit is per address: synchronous, it returns nothing or throws
        limit(hit.rateLimit, undefined, clientIp(req));
        const headers: Record<string, string> = { 'x-request-id': requestId };
        for (const [k, v] of hit.fixed.headers) headers[k] = v;
        res.writeHead(hit.fixed.status, headers);
        res.end(hit.fixed.body);
        return;
      }
      const raw = route.body ? await readBody(req, config.limits.bodyBytes) : null;
      const rq: RouteRequest = {
        method: route.method,
        path,
        params: {},
        query: {},
        body: undefined,
        headers: req.headers as Record<string, string>,
        requestId,
        ip: clientIp(req),
        addressGroup: clientIp(req),
        signal: new AbortController().signal,
      };
      if (route.auth) rq.auth = await authenticate(req.headers.authorization);
      const limited = limit(hit.rateLimit, rq.auth?.keyHash, rq.ip);
      if (limited) await limited;
      if (route.body) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(raw!.toString('utf8'));
        } catch {
          throw new ApiError('bad_request', 'malformed JSON');
        }
        if (!hit.body!(parsed)) throw new ApiError(route.bodyErrorCode?.(hit.body!.errors![0]!) ?? 'bad_request', 'invalid body');
        rq.body = parsed;
      }
      const reply = await route.handler(rq, ctx);
      if (!('json' in reply)) throw new Error('the node baseline serves JSON routes only');
      res.writeHead(reply.status ?? 200, { ...headers, ...(reply.headers ?? {}) });
      res.end(JSON.stringify(reply.json));
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError('internal', 'internal error');
      res.writeHead(err.status, headers);
      res.end(JSON.stringify({ error: { ...err.toJSON(), requestId } }));
    }
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => {
    const a = server.address();
    process.stdout.write(`listening ${typeof a === 'object' && a ? a.port : 0}\n`);
  });
  const stop = () => {
    server.close();
    void nc.close().finally(() => process.exit(0));
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

const kind = process.argv[2];
if (kind === 'uws') bareUws(JSON.parse(readFileSync(process.argv[3]!, 'utf8')) as Capture[]);
else if (kind === 'node') await plainNode();
else {
  console.error('usage: bench/lib/baseline-server.ts <uws <captures.json> | node>');
  process.exit(2);
}
