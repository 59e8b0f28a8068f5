import t from 'tap';
import { request as httpRequest } from 'node:http';
import { Type as T } from '@sinclair/typebox';
import { startPipeline } from '../helpers/pipeline.ts';
import { ApiError, ERRORS } from '../../shared/errors.ts';
import type { Route } from '../../gateway/route.ts';

// Routes shaped like the API's: an authenticated GET with a query, a JSON POST, a job-creation POST.
const routes: Route[] = [
  {
    method: 'GET',
    path: '/v1/balance',
    auth: true,
    tags: [],
    summary: '',
    errors: [],
    responses: { 200: { description: '' } },
    handler: async (req) => ({ json: { walletId: req.auth!.walletId } }),
  },
  {
    method: 'GET',
    path: '/v1/jobs',
    auth: true,
    tags: [],
    summary: '',
    errors: [],
    query: T.Object({ limit: T.Optional(T.Integer({ minimum: 1, maximum: 100 })), before: T.Optional(T.Integer({ minimum: 1 })) }),
    responses: { 200: { description: '' } },
    handler: async (req) => ({ json: { limit: req.query.limit ?? 30 } }),
  },
  {
    method: 'GET',
    path: '/v1/pricing',
    auth: false,
    tags: [],
    summary: '',
    errors: [],
    responses: { 200: { description: '' } },
    handler: async () => ({ json: {} }),
  },
  {
    method: 'POST',
    path: '/v1/websitepro/quote',
    auth: true,
    tags: [],
    summary: '',
    errors: [],
    body: T.Object({ url: T.String(), outputs: T.Array(T.String(), { minItems: 1 }) }, { additionalProperties: false }),
    bodyErrorCode: (e) => (e.instancePath === '/outputs' ? 'no_output' : 'bad_request'),
    responses: { 200: { description: '' } },
    handler: async (req) => ({ json: { echo: req.body } }),
  },
  {
    method: 'POST',
    path: '/v1/websitepro/jobs',
    auth: true,
    rateLimit: 'jobs',
    tags: [],
    summary: '',
    errors: [],
    body: T.Object({ url: T.String() }),
    responses: { 201: { description: '' } },
    handler: async () => {
      throw new ApiError('bad_url');
    },
  },
  {
    method: 'GET',
    path: '/v1/jobs/:id/results/:key',
    auth: true,
    tags: [],
    summary: '',
    errors: [],
    responses: { 200: { description: '' } },
    handler: async (req) => ({ json: req.params }),
  },
  {
    method: 'GET',
    path: '/boom',
    auth: false,
    tags: [],
    summary: '',
    errors: [],
    responses: { 200: { description: '' } },
    handler: async () => {
      throw new Error('secret internals');
    },
  },
  // a real request on the real server that nobody answers, as in a NATS failover window
  {
    method: 'GET',
    path: '/nats-silent',
    auth: false,
    tags: [],
    summary: '',
    errors: [],
    responses: { 200: { description: '' } },
    handler: async (_req, ctx) => {
      await ctx.nc.request('test.nobody.listens', '', { timeout: 300 });
      return { json: {} };
    },
  },
];

t.test('error paths answer with the spec status and the error body', async (t) => {
  const p = await startPipeline(t, routes);
  const { key, walletId } = await p.newKey();
  const app = {
    url: p.url,
    async request(method: string, path: string, o: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      if (o.key) headers.authorization = `Bearer ${o.key}`;
      let body = o.raw;
      if (o.body !== undefined) {
        body = JSON.stringify(o.body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await fetch(p.url + path, { method, headers, body });
      const text = await res.text();
      let json: any;
      try {
        json = JSON.parse(text);
      } catch {
        /* not json */
      }
      return { status: res.status, headers: res.headers, json, text };
    },
  };

  t.test('a valid key reaches its wallet; valid bodies pass', async (t) => {
    let r = await app.request('GET', '/v1/balance', { key });
    t.equal(r.status, 200);
    t.equal(r.json.walletId, walletId);
    r = await app.request('POST', '/v1/websitepro/quote', { key, body: { url: 'https://example.com', outputs: ['text'] } });
    t.same(r.json.echo, { url: 'https://example.com', outputs: ['text'] });
    r = await app.request('GET', '/v1/jobs?limit=5', { key });
    t.equal(r.json.limit, 5, 'query coerced to integer');
  });

  t.test('URL-encoded path parameters are decoded', async (t) => {
    const r = await app.request('GET', `/v1/jobs/j1/results/${encodeURIComponent('chromium-156_1920x1080_light.png')}`, { key });
    t.same(r.json, { id: 'j1', key: 'chromium-156_1920x1080_light.png' });
  });

  t.test("schema violations map to the route's code", async (t) => {
    let r = await app.request('POST', '/v1/websitepro/quote', { key, body: { url: 'https://example.com', outputs: [] } });
    t.equal(r.json.error.code, 'no_output');
    r = await app.request('POST', '/v1/websitepro/quote', { key, body: { url: 'https://example.com', outputs: ['text'], extra: 1 } });
    t.equal(r.json.error.code, 'bad_request');
    t.match(r.json.error.message, /unknown field extra/);
  });

  t.test('an unexpected failure → 500 internal without internals', async (t) => {
    const r = await app.request('GET', '/boom');
    t.equal(r.status, 500);
    t.equal(r.json.error.code, 'internal');
    t.notMatch(r.text, /secret internals/);
  });

  t.test('NATS not answering (a failover) → 503 service_unavailable with Retry-After, not 500', async (t) => {
    const r = await app.request('GET', '/nats-silent');
    t.equal(r.status, 503);
    t.equal(r.json.error.code, 'service_unavailable');
    t.equal(r.headers.get('retry-after'), '2');
    t.match(r.json.error.message, /nothing was charged/);
  });

  t.test('unknown path → 404 not_found', async (t) => {
    const r = await app.request('GET', '/v1/nothing-here');
    t.equal(r.status, 404);
    t.equal(r.json.error.code, 'not_found');
    t.type(r.json.error.message, 'string');
    t.equal(r.json.error.requestId, r.headers.get('x-request-id'));
  });

  t.test('wrong method → 405 method_not_allowed with Allow', async (t) => {
    const r = await app.request('DELETE', '/v1/pricing');
    t.equal(r.status, 405);
    t.equal(r.json.error.code, 'method_not_allowed');
    t.match(r.headers.get('allow'), /GET/);
  });

  t.test('OPTIONS answers CORS preflight', async (t) => {
    const r = await app.request('OPTIONS', '/v1/pricing');
    t.equal(r.status, 204);
    t.match(r.headers.get('access-control-allow-methods'), /GET/);
  });

  t.test('missing, malformed and unknown keys → 401 unauthorized', async (t) => {
    for (const headers of [{}, { authorization: 'Basic abc' }, { authorization: 'Bearer pk_not-a-key' }] as Record<string, string>[]) {
      const r = await app.request('GET', '/v1/balance', { headers });
      t.equal(r.status, 401, JSON.stringify(headers));
      t.equal(r.json.error.code, 'unauthorized');
    }
  });

  t.test('malformed JSON → 400 bad_request, costs nothing', async (t) => {
    const r = await app.request('POST', '/v1/websitepro/quote', { key, raw: '{"url": ', headers: { 'content-type': 'application/json' } });
    t.equal(r.status, 400);
    t.equal(r.json.error.code, 'bad_request');
    t.match(r.json.error.message, /malformed JSON/);
  });

  t.test('non-JSON content type → 415 unsupported_media_type', async (t) => {
    const r = await app.request('POST', '/v1/websitepro/quote', {
      key,
      raw: 'url=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    t.equal(r.status, 415);
    t.equal(r.json.error.code, 'unsupported_media_type');
  });

  t.test('declared body over 64 KB → 413 payload_too_large before reading', async (t) => {
    const r = await app.request('POST', '/v1/websitepro/quote', {
      key,
      raw: 'x'.repeat(65537),
      headers: { 'content-type': 'application/json' },
    });
    t.equal(r.status, 413);
    t.equal(r.json.error.code, 'payload_too_large');
  });

  t.test('chunked body over 64 KB → 413 while streaming, reads no further', async (t) => {
    const port = new URL(app.url).port;
    const result = await new Promise<{ status: number; body: string; sent: number }>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/v1/websitepro/quote',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        },
        (res) => {
          let body = '';
          res.on('data', (d) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode!, body, sent }));
        },
      );
      let sent = 0;
      req.on('error', (e) => (sent > 65536 ? resolve({ status: 413, body: '{"error":{"code":"payload_too_large"}}', sent }) : reject(e)));
      const chunk = Buffer.alloc(16 * 1024, 0x20);
      const pump = () => {
        while (sent < 4 * 1024 * 1024) {
          sent += chunk.length;
          if (!req.write(chunk)) return req.once('drain', pump);
        }
        req.end();
      };
      pump();
    });
    t.equal(result.status, 413);
    t.equal(JSON.parse(result.body).error.code, 'payload_too_large');
  });

  t.test('bad query value → 400 bad_request', async (t) => {
    for (const v of ['abc', '2.5', '0', '101', 'Infinity', '1e400', '-Infinity', 'NaN', '']) {
      const r = await app.request('GET', `/v1/jobs?limit=${encodeURIComponent(v)}`, { key });
      t.equal(r.status, 400, `limit=${v}`);
      t.equal(r.json.error.code, 'bad_request');
    }
    for (const v of ['Infinity', '1e400']) {
      const r = await app.request('GET', `/v1/jobs?before=${v}`, { key });
      t.equal(r.status, 400, `before=${v} (no maximum in the schema)`);
    }
  });

  t.test('every error code has a status that matches the spec table', async (t) => {
    const spec: Record<string, number> = {
      bad_request: 400,
      bad_url: 400,
      no_output: 400,
      unknown_browser: 400,
      bad_viewport: 400,
      bad_relay_url: 400,
      bad_port: 400,
      bad_webhook: 400,
      no_checks: 400,
      blocked_address: 400,
      unreachable: 400,
      unauthorized: 401,
      insufficient_funds: 402,
      not_found: 404,
      unknown_service: 404,
      not_ready: 409,
      expired: 410,
      rate_limited: 429,
      relay_busy: 429,
      service_unavailable: 503,
      busy: 503,
    };
    for (const [code, status] of Object.entries(spec)) t.equal(ERRORS[code as keyof typeof ERRORS].status, status, code);
  });
});

t.test('job creation requests are limited per key (refused ones too): 429 rate_limited with Retry-After', async (t) => {
  // refused creations no longer count against limits.jobsPerHour (issue 28 item 6,
  // test/security/job-limit.test.ts); the per-minute request bound counts every request
  const p = await startPipeline(t, routes, { limits: { jobRequestsPerMinute: 3 } });
  const { key } = await p.newKey();
  const app = {
    async request(method: string, path: string, o: { key: string; body: unknown }) {
      const res = await fetch(p.url + path, {
        method,
        headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/json' },
        body: JSON.stringify(o.body),
      });
      return { status: res.status, headers: res.headers, json: (await res.json()) as any };
    },
  };
  const codes: number[] = [];
  let last;
  for (let i = 0; i < 5; i++) {
    last = await app.request('POST', '/v1/websitepro/jobs', { key, body: { url: 'not a url', outputs: ['metadata'] } });
    codes.push(last.status);
  }
  t.same(
    codes.slice(0, 3).every((c) => c !== 429),
    true,
    'the first three pass the limiter',
  );
  t.equal(codes[3], 429);
  t.equal(last!.json.error.code, 'rate_limited');
  t.ok(Number(last!.headers.get('retry-after')) >= 1, 'Retry-After set');
  // another key is not affected
  const other = await p.newKey();
  const r = await app.request('POST', '/v1/websitepro/jobs', { key: other.key, body: { url: 'not a url', outputs: ['metadata'] } });
  t.not(r.status, 429);
});

t.test('public endpoints are limited per client address: 429 rate_limited with Retry-After', async (t) => {
  const p = await startPipeline(t, routes, { server: { publicRequestsPerMinute: 2 } });
  const statuses = [];
  let last: Response | undefined;
  for (let i = 0; i < 3; i++) {
    last = await fetch(`${p.url}/v1/pricing`);
    statuses.push(last.status);
  }
  t.same(statuses, [200, 200, 429]);
  t.equal(((await last!.json()) as any).error.code, 'rate_limited');
  t.equal(last!.headers.get('retry-after'), '30');
});
