// A client that goes away in the middle of its body: the body read ends at once (answered 499 in the
// log, the handler never runs), without a timer per request polling for it.
import t from 'tap';
import net from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Type as T } from '@sinclair/typebox';
import { startPipeline } from '../helpers/pipeline.ts';
import type { Route } from '../../gateway/route.ts';

t.test('a body cut off by the client: 499, the handler never runs; a whole body still arrives', async (t) => {
  const lines: { msg?: string; status?: number; path?: string }[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
      cb();
    },
  });
  const log = pino({ level: 'info' }, sink);
  let handled = 0;
  const routes: Route[] = [
    {
      method: 'POST',
      path: '/echo',
      auth: false,
      summary: 'echo',
      tags: ['test'],
      errors: [],
      body: T.Object({ text: T.String() }),
      responses: { 200: { description: 'the text', schema: T.Object({ text: T.String() }) } },
      async handler(req) {
        handled++;
        return { json: { text: req.body.text } };
      },
    },
  ];
  const p = await startPipeline(t, routes, {}, log as never);

  // a whole body, in several packets: answered
  const whole = await new Promise<string>((resolve, reject) => {
    const s = net.connect(p.port, '127.0.0.1');
    const body = JSON.stringify({ text: 'x'.repeat(5000) });
    let got = '';
    s.on('data', (d) => {
      got += d;
      if (got.includes('"text"')) {
        s.destroy();
        resolve(got);
      }
    });
    s.on('error', reject);
    s.write(`POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    s.write(body.slice(0, 100));
    setTimeout(() => s.write(body.slice(100)), 50);
  });
  t.match(whole, /^HTTP\/1\.1 200/);
  t.equal(handled, 1);

  // headers and half the body, then the client is gone
  const s = net.connect(p.port, '127.0.0.1');
  await new Promise<void>((r) => s.once('connect', () => r()));
  s.write('POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"text":"');
  await new Promise((r) => setTimeout(r, 50));
  s.destroy();
  const until = Date.now() + 2000;
  while (!lines.some((l) => l.msg === 'request' && l.status === 499) && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  const cut = lines.find((l) => l.msg === 'request' && l.status === 499);
  t.ok(cut, 'the cut-off request is logged as 499');
  t.equal(handled, 1, 'its handler never ran');
});
