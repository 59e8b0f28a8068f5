import t from 'tap';
import zlib from 'node:zlib';
import net from 'node:net';
import { guardedFetch, OutboundError } from '../../shared/outbound/index.ts';
import { fixtureServer, html, redirect } from './fixture-server.ts';

const LOOP = ['127.0.0.1/32'];

t.test('fetches, follows a chain of redirects, reports the final URL', async (t) => {
  const s = await fixtureServer(t, {
    '/a': redirect('/b', 301),
    '/b': redirect('/c', 307),
    '/c': redirect('./d?x=1', 303),
    '/d': html('<p>end</p>'),
  });
  const r = await guardedFetch(s.url('/a'), { allowCidrs: LOOP });
  t.equal(r.status, 200);
  t.equal(r.url, s.url('/d?x=1'));
  t.equal(r.chain.length, 4);
  t.equal(r.body.toString(), '<p>end</p>');
  t.equal(r.address, '127.0.0.1');
});

t.test('at most maxRedirects hops', async (t) => {
  const s = await fixtureServer(t, { '/loop': redirect('/loop') });
  await t.rejects(guardedFetch(s.url('/loop'), { allowCidrs: LOOP, maxRedirects: 3 }), { code: 'too_many_redirects' });
  t.equal(s.hits.length, 4, 'first request plus 3 redirects');
  const z = await fixtureServer(t, { '/one': redirect('/end'), '/end': html('x') });
  await t.rejects(guardedFetch(z.url('/one'), { allowCidrs: LOOP, maxRedirects: 0 }), { code: 'too_many_redirects' });
});

t.test('a redirect to a non-public address is refused before connecting', async (t) => {
  for (const to of [
    'http://10.0.0.1/',
    'http://127.0.0.2/',
    'http://[::1]/',
    'http://169.254.169.254/latest',
    'http://0x7f000002/',
    'http://localhost.localdomain/',
    'file:///etc/passwd',
    'gopher://127.0.0.1/',
  ]) {
    const s = await fixtureServer(t, { '/go': redirect(to) });
    await t.rejects(guardedFetch(s.url('/go'), { allowCidrs: LOOP }), { code: /blocked_address|bad_url/ }, to);
  }
});

t.test('DNS rebinding: the address checked is the address connected to', async (t) => {
  const s = await fixtureServer(t, { '/': html('pinned') });
  let calls = 0;
  // first answer public-allowed (127.0.0.1), any later one private: a second lookup would show
  const resolver = async () => (calls++ === 0 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '10.0.0.1', family: 4 }]);
  const r = await guardedFetch(`http://rebind.example.com:${s.port}/`, { allowCidrs: LOOP, resolver });
  t.equal(r.body.toString(), 'pinned');
  t.equal(calls, 1, 'the name was looked up exactly once');
  // a name that resolves to 127.0.0.2 while only 127.0.0.1/32 is allowed
  await t.rejects(
    guardedFetch(`http://other.example.com:${s.port}/`, { allowCidrs: LOOP, resolver: async () => [{ address: '127.0.0.2', family: 4 }] }),
    { code: 'blocked_address' },
  );
});

t.test('cross-origin redirects drop credentials headers', async (t) => {
  let seen: string | undefined = 'unset';
  const b = await fixtureServer(t, {
    '/x': (req, res) => {
      seen = req.headers.authorization;
      res.end('ok');
    },
  });
  const a = await fixtureServer(t, { '/': redirect(b.url('/x')) });
  await guardedFetch(a.url('/'), { allowCidrs: LOOP, headers: { authorization: 'Bearer secret' } });
  t.equal(seen, undefined);
});

t.test('gzip, br and deflate bodies are decoded', async (t) => {
  const body = '<p>' + 'héllo wörld '.repeat(500) + '</p>';
  const s = await fixtureServer(t, {
    '/gz': (_q, r) => r.writeHead(200, { 'content-encoding': 'gzip' }).end(zlib.gzipSync(body)),
    '/br': (_q, r) => r.writeHead(200, { 'content-encoding': 'br' }).end(zlib.brotliCompressSync(body)),
    '/df': (_q, r) => r.writeHead(200, { 'content-encoding': 'deflate' }).end(zlib.deflateSync(body)),
    '/raw': (_q, r) => r.writeHead(200, { 'content-encoding': 'deflate' }).end(zlib.deflateRawSync(body)),
  });
  for (const p of ['/gz', '/br', '/df', '/raw']) t.equal((await guardedFetch(s.url(p), { allowCidrs: LOOP })).body.toString(), body, p);
});

t.test('size cap: declared, streamed, and decompression bombs', async (t) => {
  const big = Buffer.alloc(200_000, 'a');
  const s = await fixtureServer(t, {
    '/declared': (_q, r) => r.writeHead(200, { 'content-length': String(big.length) }).end(big),
    '/chunked': (_q, r) => {
      r.writeHead(200);
      for (let i = 0; i < 20; i++) r.write(big.subarray(0, 10_000));
      r.end();
    },
    '/bomb': (_q, r) => r.writeHead(200, { 'content-encoding': 'gzip' }).end(zlib.gzipSync(Buffer.alloc(50_000_000))),
    '/fits': (_q, r) => r.end(big.subarray(0, 1000)),
  });
  for (const p of ['/declared', '/chunked', '/bomb'])
    await t.rejects(guardedFetch(s.url(p), { allowCidrs: LOOP, maxBytes: 100_000 }), { code: 'too_large' }, p);
  t.equal((await guardedFetch(s.url('/fits'), { allowCidrs: LOOP, maxBytes: 100_000 })).body.length, 1000);
});

t.test('a server that never answers times out; a closed port is unreachable', async (t) => {
  const silent = net.createServer(() => {});
  const held: net.Socket[] = [];
  silent.on('connection', (s) => held.push(s));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => {
    held.forEach((s) => s.destroy());
    silent.close();
  });
  const port = (silent.address() as net.AddressInfo).port;
  const t0 = Date.now();
  await t.rejects(guardedFetch(`http://127.0.0.1:${port}/`, { allowCidrs: LOOP, timeoutMs: 400 }), { code: 'timeout' });
  t.ok(Date.now() - t0 < 2000, 'gave up near the timeout');
  const closed = net.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
  const cport = (closed.address() as net.AddressInfo).port;
  await new Promise((r) => closed.close(r));
  await t.rejects(guardedFetch(`http://127.0.0.1:${cport}/`, { allowCidrs: LOOP }), { code: 'unreachable' });
});

t.test('default configuration refuses loopback', async (t) => {
  const s = await fixtureServer(t, { '/': html('x') });
  const err = await guardedFetch(s.url('/'), { allowCidrs: [] }).catch((e) => e);
  t.ok(err instanceof OutboundError);
  t.equal(err.code, 'blocked_address');
  t.equal(s.hits.length, 0, 'never connected');
});

t.test('POST 303 becomes GET; 307 keeps method and body', async (t) => {
  const seen: string[] = [];
  const s = await fixtureServer(t, {
    '/p303': redirect('/sink', 303),
    '/p307': redirect('/sink', 307),
    '/sink': (req, res) => {
      let b = '';
      req.on('data', (c) => (b += c));
      req.on('end', () => {
        seen.push(`${req.method} ${b}`);
        res.end('ok');
      });
    },
  });
  await guardedFetch(s.url('/p303'), { allowCidrs: LOOP, method: 'POST', body: 'hi', headers: { 'content-type': 'text/plain' } });
  await guardedFetch(s.url('/p307'), { allowCidrs: LOOP, method: 'POST', body: 'hi', headers: { 'content-type': 'text/plain' } });
  t.same(seen, ['GET ', 'POST hi']);
});
