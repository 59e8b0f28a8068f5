// Job-creation check of websitepro (and shots): codes bad_url, blocked_address, unreachable.
import t from 'tap';
import net from 'node:net';
import { precheckTarget } from '../../shared/outbound/index.ts';
import { websitepro } from '../../shared/services/websitepro.ts';
import { ApiError } from '../../shared/errors.ts';
import { loadConfig } from '../../shared/config/index.ts';
import { testConfig } from '../helpers/nats.ts';
import { fixtureServer, html } from './fixture-server.ts';

const config = testConfig({ outbound: { allowCidrs: ['127.0.0.1/32'], checkTimeoutMs: 300 } });

t.test('a live allowed target passes', async (t) => {
  const s = await fixtureServer(t, { '/': html('x') });
  const r = await precheckTarget(s.url('/'), config);
  t.equal(r.pinned.address, '127.0.0.1');
  t.equal(s.hits.length, 0, 'only a TCP connect, no request sent');
});

t.test('codes', async (t) => {
  const codeOf = (p: Promise<unknown>) =>
    p.then(
      () => 'ok',
      (e) => (e instanceof ApiError ? e.code : `not ApiError: ${e}`),
    );
  t.equal(await codeOf(precheckTarget('ftp://example.com/', config)), 'bad_url');
  t.equal(await codeOf(precheckTarget('not a url', config)), 'bad_url');
  t.equal(await codeOf(precheckTarget('http://user:pw@example.com/', config)), 'bad_url');
  t.equal(await codeOf(precheckTarget('http://10.0.0.1/', config)), 'blocked_address');
  t.equal(await codeOf(precheckTarget('http://127.0.0.2/', config)), 'blocked_address');
  t.equal(await codeOf(precheckTarget('http://[::ffff:192.168.0.1]/', config)), 'blocked_address');
  t.equal(await codeOf(precheckTarget('http://metadata.google.internal/', config)), 'blocked_address');
  const closed = net.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
  const port = (closed.address() as net.AddressInfo).port;
  await new Promise((r) => closed.close(r));
  t.equal(await codeOf(precheckTarget(`http://127.0.0.1:${port}/`, config)), 'unreachable', 'closed port');
  t.equal(
    await codeOf(precheckTarget('http://no-such-host.invalid-tld-zz/', config)),
    'unreachable',
    'does not resolve (no network here either way)',
  );
  t.equal(await codeOf(precheckTarget('http://x.example.com/', config, async () => [])), 'unreachable', 'no address');
});

t.test('the default configuration allows no private address', async (t) => {
  const def = loadConfig({ env: {}, noDefaultFile: true });
  t.same(def.outbound.allowCidrs, []);
  const s = await fixtureServer(t, { '/': html('x') });
  await t.rejects(precheckTarget(s.url('/'), def), { code: 'blocked_address' });
});

t.test('websitepro.precheck is wired to it', async (t) => {
  const s = await fixtureServer(t, { '/': html('x') });
  const ctx = { config } as never;
  await websitepro.precheck!({ url: s.url('/'), outputs: ['markdown'] }, { target: '127.0.0.1', items: [] }, ctx);
  await t.rejects(websitepro.precheck!({ url: 'http://192.168.1.1/', outputs: ['markdown'] }, { target: '192.168.1.1', items: [] }, ctx), {
    code: 'blocked_address',
  });
});
