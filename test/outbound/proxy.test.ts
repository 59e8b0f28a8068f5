import t from 'tap';
import http from 'node:http';
import net from 'node:net';
import { startGuardProxy } from '../../shared/outbound/index.ts';
import { fixtureServer, html } from './fixture-server.ts';

const LOOP = ['127.0.0.1/32'];

function connectVia(proxyPort: number, target: string): Promise<{ status: number; raw: string; socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: proxyPort, method: 'CONNECT', path: target });
    req.on('connect', (res, socket) => resolve({ status: res.statusCode ?? 0, raw: String(res.headers['x-guard-error'] ?? ''), socket }));
    req.on('error', reject);
    req.end();
  });
}

function getVia(proxyPort: number, url: string): Promise<{ status: number; body: string; guard: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: proxyPort, method: 'GET', path: url, headers: { host: new URL(url).host } });
    req.on('response', (res) => {
      let b = '';
      res.on('data', (c) => (b += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: b, guard: String(res.headers['x-guard-error'] ?? '') }));
      // a body the proxy cut: an error, not a wait for an end that never comes
      res.on('error', reject);
      res.on('aborted', () => reject(new Error(`the answer was cut after ${JSON.stringify(b)}`)));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('plain http through the proxy: allowed target forwarded, others refused', async (t) => {
  const s = await fixtureServer(t, { '/': html('<p>through</p>') });
  const blockedHits: string[] = [];
  const p = await startGuardProxy({ allowCidrs: LOOP, onBlocked: (e) => blockedHits.push(e.host) });
  t.teardown(() => p.stop());
  const ok = await getVia(p.port, s.url('/'));
  t.equal(ok.status, 200);
  t.equal(ok.body, '<p>through</p>');
  for (const u of [
    'http://169.254.169.254/latest/meta-data/',
    `http://127.0.0.2:${s.port}/`,
    'http://[::1]/',
    'http://2130706434/',
    'http://metadata.google.internal/',
  ]) {
    const r = await getVia(p.port, u);
    t.equal(r.status, 403, u);
    t.equal(r.guard, 'blocked_address', u);
  }
  t.equal(p.blocked, 5);
  t.equal(blockedHits.length, 5);
  const ftp = await getVia(p.port, 'ftp://8.8.8.8/');
  t.equal(ftp.status, 400);
});

t.test('CONNECT tunnels to the checked address only', async (t) => {
  const s = await fixtureServer(t, { '/': html('tunnelled') });
  const p = await startGuardProxy({ allowCidrs: LOOP });
  t.teardown(() => p.stop());
  const c = await connectVia(p.port, `127.0.0.1:${s.port}`);
  t.equal(c.status, 200);
  const body = await new Promise<string>((resolve) => {
    let b = '';
    c.socket.on('data', (d) => (b += d));
    c.socket.on('end', () => resolve(b));
    c.socket.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
  });
  t.match(body, /tunnelled/);
  for (const target of [
    '10.0.0.1:443',
    `127.0.0.2:${s.port}`,
    '[::1]:443',
    '[::ffff:10.0.0.1]:443',
    '169.254.169.254:80',
    '0x7f000002:443',
    'metadata.google.internal:80',
    'intranet:443',
  ]) {
    const r = await connectVia(p.port, target);
    t.equal(r.status, 403, target);
    r.socket.destroy();
  }
  const bad = await connectVia(p.port, 'no-port-here');
  t.equal(bad.status, 400);
  bad.socket.destroy();
});

t.test('a name is resolved once by the proxy (no rebinding)', async (t) => {
  const s = await fixtureServer(t, { '/': html('pinned') });
  let calls = 0;
  const p = await startGuardProxy({
    allowCidrs: LOOP,
    resolver: async () => (calls++ ? [{ address: '10.0.0.1', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]),
  });
  t.teardown(() => p.stop());
  const r = await getVia(p.port, `http://rebind.example.com:${s.port}/`);
  t.equal(r.body, 'pinned');
  t.equal(calls, 1);
  const second = await getVia(p.port, `http://rebind.example.com:${s.port}/`);
  t.equal(second.status, 403, 'the next lookup answers 10.0.0.1 and is refused');
});

t.test('a target cannot fake the guard signal header', async (t) => {
  const s = await fixtureServer(t, { '/': html('<p>sly</p>', { 'x-guard-error': 'blocked_address' }) });
  const p = await startGuardProxy({ allowCidrs: LOOP });
  t.teardown(() => p.stop());
  const r = await getVia(p.port, s.url('/'));
  t.equal(r.status, 200);
  t.equal(r.body, '<p>sly</p>');
  t.equal(r.guard, '', 'the upstream x-guard-error is dropped');
});

t.test(
  'plain http: the connect timeout bounds the connect only, not a slow answer; a request the browser drops is dropped upstream',
  async (t) => {
    const connectTimeoutMs = 2000;
    const later = (fn: () => void) => setTimeout(fn, connectTimeoutMs * 2.5);
    let dropped!: () => void;
    const upstreamClosed = new Promise<void>((r) => (dropped = r));
    let heldArrived!: () => void;
    const held = new Promise<void>((r) => (heldArrived = r));
    const s = await fixtureServer(t, {
      // silent past the connect timeout before the first byte (a slow server)...
      '/late': (_req, res) => later(() => res.writeHead(200, { 'content-type': 'text/html' }).end('late')),
      // ...and in the middle of the body (a slow stream)
      '/pause': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.write('first ');
        later(() => res.end('second'));
      },
      // never answers: the test's client gives up on it
      '/held': (_req, res) => {
        res.once('close', () => dropped());
        heldArrived();
      },
    });
    const p = await startGuardProxy({ allowCidrs: LOOP, connectTimeoutMs });
    t.teardown(() => p.stop());
    // the proxy's timer, if it bounded the exchange, is armed before the fixture's longer one
    const [late, pause] = await Promise.all([getVia(p.port, s.url('/late')), getVia(p.port, s.url('/pause'))]);
    t.same(late, { status: 200, body: 'late', guard: '' }, 'an answer slower than the connect timeout is forwarded');
    t.same(pause, { status: 200, body: 'first second', guard: '' }, 'a body that pauses longer than the connect timeout is forwarded');

    const client = http.request({
      host: '127.0.0.1',
      port: p.port,
      method: 'GET',
      path: s.url('/held'),
      headers: { host: new URL(s.url('/')).host },
    });
    client.on('error', () => {});
    client.end();
    await held;
    client.destroy();
    let bound: NodeJS.Timeout | undefined;
    const closed = await Promise.race([
      upstreamClosed.then(() => true),
      new Promise<boolean>((r) => (bound = setTimeout(() => r(false), 60000))),
    ]);
    clearTimeout(bound);
    t.ok(closed, 'the proxy closed the upstream request the client dropped');
  },
);
