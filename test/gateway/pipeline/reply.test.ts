// The reply step on a real uWebSockets.js server: JSON, bytes, HEAD, a stream of unknown length,
// and the one error shape.
import t from 'tap';
import { Readable } from 'node:stream';
import { loadNativeUws } from '../../../gateway/uws.ts';
import { sendReply, sendError } from '../../../gateway/pipeline/reply.ts';
import { commonHeaders } from '../../../gateway/pipeline/cors.ts';
import type { Reply } from '../../../gateway/route.ts';
import type { ResState } from '../../../gateway/http.ts';
import { ApiError } from '../../../shared/errors.ts';

t.test('replies', async (t) => {
  const { uws } = loadNativeUws();
  const app = uws.App();
  const replies: Record<string, Reply> = {
    '/json': { status: 201, json: { a: 1 }, headers: { 'x-extra': 'y' } },
    '/bytes': { body: 'hello', headers: { 'content-type': 'text/plain' } },
    '/stream': {
      stream: Readable.from([Buffer.from('ab'), Buffer.from('cd')]) as AsyncIterable<Uint8Array>,
      headers: { 'content-type': 'application/octet-stream' },
    },
  };
  const sent: number[] = [];
  app.any('/*', (res, req) => {
    const url = req.getUrl();
    const head = req.getMethod().toUpperCase() === 'HEAD';
    const state: ResState = { aborted: false, done: false };
    res.onAborted(() => {
      state.aborted = true;
    });
    const common = commonHeaders('req-1');
    if (url === '/error')
      return void sent.push(
        sendError(res, state, common, new ApiError('rate_limited', 'slow down', { retryAfter: 3 }, { 'retry-after': '3' }), 'http://base'),
      );
    void sendReply(res, state, head, common, replies[url]!).then((s) => sent.push(s));
  });
  let sock: unknown;
  const port: number = await new Promise((res, rej) =>
    app.listen('127.0.0.1', 0, (s) => (s ? ((sock = s), res(uws.us_socket_local_port(s))) : rej(new Error('listen')))),
  );
  t.teardown(() => uws.us_listen_socket_close(sock as never));
  const base = `http://127.0.0.1:${port}`;

  let r = await fetch(`${base}/json`);
  t.equal(r.status, 201);
  t.equal(r.headers.get('content-type'), 'application/json');
  t.equal(r.headers.get('x-extra'), 'y');
  t.equal(r.headers.get('x-request-id'), 'req-1');
  t.same(await r.json(), { a: 1 });
  r = await fetch(`${base}/bytes`);
  t.equal(await r.text(), 'hello');
  r = await fetch(`${base}/bytes`, { method: 'HEAD' });
  t.equal(r.status, 200);
  t.equal(await r.text(), '', 'HEAD has no body');
  r = await fetch(`${base}/stream`);
  t.equal(await r.text(), 'abcd');
  r = await fetch(`${base}/error`);
  t.equal(r.status, 429);
  t.equal(r.headers.get('retry-after'), '3');
  t.equal(r.headers.get('access-control-allow-origin'), '*');
  const body = (await r.json()) as { error: Record<string, unknown> };
  t.match(body.error, {
    code: 'rate_limited',
    message: 'slow down',
    retryAfter: 3,
    requestId: 'req-1',
    docs: /^http:\/\/base\/docs\/errors#rate_limited$/,
  });
  t.same(sent.sort(), [200, 200, 200, 201, 429]);
});
