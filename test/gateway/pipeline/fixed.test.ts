// A `fixedAnswer` route: its handler runs once at mount, every GET is answered from the kept bytes
// with its own request id and CORS headers, and still takes a token from the per-address limit.
import t from 'tap';
import { startPipeline } from '../../helpers/pipeline.ts';
import type { Route } from '../../../gateway/route.ts';

function countingRoute() {
  const calls = { n: 0 };
  const route: Route = {
    method: 'GET',
    path: '/v1/fixed',
    auth: false,
    summary: 'fixed',
    tags: ['test'],
    errors: ['rate_limited'],
    responses: { 200: { description: 'x' } },
    fixedAnswer: true,
    handler: async (_req, ctx) => {
      calls.n++;
      return { json: { price: 42, base: ctx.baseUrl } };
    },
  };
  return { route, calls };
}

/** The fixed answer is built in the background at mount: wait until a first answer came from it. */
async function settled(url: string) {
  for (let i = 0; i < 50; i++) {
    await fetch(url);
    await new Promise((r) => setTimeout(r, 20));
  }
}

t.test('the handler runs once; every caller gets its bytes with its own request id', async (t) => {
  const { route, calls } = countingRoute();
  const p = await startPipeline(t, [route], { server: { publicRequestsPerMinute: 1_000_000 } });
  await settled(`${p.url}/v1/fixed`);
  const before = calls.n;
  const answers = await Promise.all(Array.from({ length: 20 }, () => fetch(`${p.url}/v1/fixed`)));
  t.equal(calls.n, before, 'no handler call per request (fails when every GET runs the handler)');
  const ids = new Set<string>();
  for (const r of answers) {
    t.equal(r.status, 200);
    t.equal(r.headers.get('content-type'), 'application/json');
    t.equal(r.headers.get('access-control-allow-origin'), '*');
    t.match(r.headers.get('access-control-expose-headers'), /x-request-id/);
    t.same(await r.json(), { price: 42, base: 'http://localhost' });
    ids.add(r.headers.get('x-request-id')!);
  }
  t.equal(ids.size, 20, 'a fresh request id per answer');
  const echoed = await fetch(`${p.url}/v1/fixed`, { headers: { 'x-request-id': 'client-id.1' } });
  t.equal(echoed.headers.get('x-request-id'), 'client-id.1', 'a valid incoming id is kept');
  const refused = await fetch(`${p.url}/v1/fixed`, { headers: { 'x-request-id': 'not valid!' } });
  t.not(refused.headers.get('x-request-id'), 'not valid!', 'an invalid incoming id is replaced');
});

t.test('a fixed answer still takes a token per client address: 429 in the one error shape', async (t) => {
  const { route } = countingRoute();
  const p = await startPipeline(t, [route], { server: { publicRequestsPerMinute: 3 } });
  const statuses: number[] = [];
  let last: Response | undefined;
  for (let i = 0; i < 5; i++) {
    last = await fetch(`${p.url}/v1/fixed`);
    statuses.push(last.status);
    if (i === 0) await new Promise((r) => setTimeout(r, 200)); // the rest come from the kept bytes
  }
  t.same(statuses, [200, 200, 200, 429, 429]);
  const body = (await last!.json()) as { error: { code: string; requestId: string } };
  t.equal(body.error.code, 'rate_limited');
  t.equal(body.error.requestId, last!.headers.get('x-request-id'));
  t.ok(Number(last!.headers.get('retry-after')) >= 1);
});

t.test('HEAD and other methods on a fixed route go the ordinary way', async (t) => {
  const { route } = countingRoute();
  const p = await startPipeline(t, [route], { server: { publicRequestsPerMinute: 1_000_000 } });
  await settled(`${p.url}/v1/fixed`);
  const head = await fetch(`${p.url}/v1/fixed`, { method: 'HEAD' });
  t.equal(head.status, 200);
  const post = await fetch(`${p.url}/v1/fixed`, { method: 'POST' });
  t.equal(post.status, 405);
  t.equal(post.headers.get('allow'), 'GET, OPTIONS');
  const opt = await fetch(`${p.url}/v1/fixed`, { method: 'OPTIONS' });
  t.equal(opt.status, 204);
});

t.test('a followed fixed answer is rebuilt when its inputs change, not per request', async (t) => {
  const state = { price: 1, calls: 0, stopped: false };
  let changed: () => void = () => {};
  const route: Route = {
    method: 'GET',
    path: '/v1/followed',
    auth: false,
    summary: 'followed',
    tags: ['test'],
    errors: ['rate_limited'],
    responses: { 200: { description: 'x' } },
    fixedAnswer: {
      follows: (_ctx, c) => {
        changed = c;
        return () => {
          state.stopped = true;
        };
      },
    },
    handler: async () => {
      state.calls++;
      return { json: { price: state.price } };
    },
  };
  const p = await startPipeline(t, [route], { server: { publicRequestsPerMinute: 1_000_000 } });
  await settled(`${p.url}/v1/followed`);
  const get = async () => ((await (await fetch(`${p.url}/v1/followed`)).json()) as { price: number }).price;
  const calls = state.calls;
  for (let i = 0; i < 10; i++) t.equal(await get(), 1);
  t.equal(state.calls, calls, 'no handler call per request');
  state.price = 2;
  t.equal(await get(), 1, 'the kept answer until told of a change');
  changed();
  let seen = 1;
  for (let i = 0; i < 100 && seen !== 2; i++) {
    await new Promise((r) => setTimeout(r, 20));
    seen = await get();
  }
  t.equal(seen, 2, 'the rebuilt answer once told (fails if a change is never reflected)');
  t.equal(state.calls, calls + 1, 'one rebuild for one change');
});

t.test('a rebuild that fails hands the route back to its handler rather than keep an old answer', async (t) => {
  const state = { price: 1, fail: false };
  let changed: () => void = () => {};
  const route: Route = {
    method: 'GET',
    path: '/v1/followed',
    auth: false,
    summary: 'followed',
    tags: ['test'],
    errors: ['rate_limited'],
    responses: { 200: { description: 'x' } },
    fixedAnswer: {
      follows: (_ctx, c) => {
        changed = c;
        return () => {};
      },
    },
    handler: async (req) => {
      // the rebuild runs with no caller (empty request id); a real request still gets an answer
      if (state.fail && req.requestId === '') throw new Error('catalogue not readable');
      return { json: { price: state.price } };
    },
  };
  const p = await startPipeline(t, [route], { server: { publicRequestsPerMinute: 1_000_000 } });
  await settled(`${p.url}/v1/followed`);
  state.fail = true;
  state.price = 3;
  changed();
  await new Promise((r) => setTimeout(r, 100));
  const r = await fetch(`${p.url}/v1/followed`);
  t.same(await r.json(), { price: 3 }, 'the handler answers with the current state');
});
