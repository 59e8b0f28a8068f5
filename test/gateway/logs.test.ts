import t from 'tap';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { startPipeline } from '../helpers/pipeline.ts';
import type { Route } from '../../gateway/route.ts';

t.test('one structured log line per request, with its request id, never the key', async (t) => {
  const lines: any[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  const log = pino({ level: 'info' }, sink);
  const routes: Route[] = [
    {
      method: 'GET',
      path: '/v1/balance',
      auth: true,
      tags: [],
      summary: '',
      errors: [],
      responses: { 200: { description: '' } },
      handler: async () => ({ json: { ok: 1 } }),
    },
  ];
  const p = await startPipeline(t, routes, {}, log);
  const { key } = await p.newKey();
  const ok = await fetch(`${p.url}/v1/balance`, { headers: { authorization: `Bearer ${key}` } });
  const bad = await fetch(`${p.url}/v1/balance`, { headers: { authorization: `Bearer ${key}x` } });
  await new Promise((r) => setTimeout(r, 100));
  const reqLines = lines.filter((l) => l.msg === 'request');
  t.equal(reqLines.length, 2, 'one line per request');
  t.same(
    reqLines.map((l) => [l.status, l.route, l.method]),
    [
      [200, '/v1/balance', 'GET'],
      [401, '/v1/balance', 'GET'],
    ],
  );
  t.equal(reqLines[0].reqId, ok.headers.get('x-request-id'));
  t.equal(reqLines[1].reqId, bad.headers.get('x-request-id'));
  t.type(reqLines[0].ms, 'number');
  // Server-Timing: the gateway's time until the answer was ready, within the logged time (taken after the send)
  for (const [i, r] of [ok, bad].entries()) {
    const dur = Number(/^app;dur=(\d+\.\d{2})$/.exec(r.headers.get('server-timing') ?? '')?.[1]);
    t.ok(dur >= 0 && dur <= reqLines[i]!.ms + 0.1, `server-timing ${r.headers.get('server-timing')}, logged ${reqLines[i]!.ms} ms`);
  }
  t.notMatch(JSON.stringify(lines), key.slice(3), 'the key appears in no log line');
});
