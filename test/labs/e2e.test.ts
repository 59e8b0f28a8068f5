// labs over HTTP: gateway → precheck → charge → supervisor → relay-prober → reports store →
// download; the dataset fee once per wallet; modules that cannot run refunded; relay_busy.
import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { startMiniRelay } from './fixtures/mini-relay.ts';
import { fastLabs, fastWebhooks, validate } from './fixtures/probe.ts';

const relay = await startMiniRelay({});
const silent = await startMiniRelay({ silent: true });
t.teardown(() => relay.close());
t.teardown(() => silent.close());

t.test('labs end to end', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'relay-prober'],
    config: { labs: { ...fastLabs, allowedPorts: [relay.port, silent.port], relayTestsPerHour: 4 }, webhooks: fastWebhooks },
  });
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 100_000, 'test');
  const balance = async () => (await wallet.balance(app.nc, k.walletId)).balance;
  const finish = async (job: any) => {
    for (let i = 0; i < 20 && (job.status === 'queued' || job.status === 'processing'); i++)
      job = (await app.request('GET', `/v1/jobs/${job.id}?wait=25`, { key: k.key })).json.job;
    return job;
  };

  const svc = await app.request('GET', '/v1/services/labs', { key: k.key });
  t.equal(svc.status, 200, svc.text);

  const q = await app.request('POST', '/v1/labs/quote', { key: k.key, body: { relay: relay.url, modules: ['conformance'] } });
  t.equal(q.status, 200, q.text);
  t.same(
    q.json.items.map((i: { key: string }) => i.key),
    ['conformance', 'dataset'],
    'first job of the wallet: dataset fee listed',
  );

  const r = await app.request('POST', '/v1/labs/jobs?wait=25', {
    key: k.key,
    body: { relay: relay.url, modules: ['quick', 'conformance'], checks: ['filter-ids', 'unknown'] },
  });
  t.equal(r.status, 201, r.text);
  const job = await finish(r.json.job);
  t.equal(job.status, 'completed');
  const byKey = Object.fromEntries(job.results.map((x: { key: string }) => [x.key, x]));
  t.same(Object.keys(byKey).sort(), ['conformance', 'custom', 'dataset', 'quick']);
  t.match(byKey.dataset, { status: 'done', oneTime: true });
  for (const key of ['quick', 'conformance', 'custom']) {
    t.match(byKey[key], { status: 'done', contentType: 'application/json' }, key);
    const dl = await app.request('GET', new URL(byKey[key].url).pathname, { key: k.key });
    t.equal(dl.status, 200);
    t.ok(validate(dl.json), `${key}: labs.report/1`);
    t.equal(dl.json.module, key);
  }
  t.equal(job.charged, job.cost);

  // the same report as a page: format=html or a browser's Accept; JSON stays the default
  const quickPath = new URL(byKey.quick.url).pathname;
  const page = await app.request('GET', `${quickPath}?format=html`, { key: k.key });
  t.equal(page.status, 200, page.text.slice(0, 200));
  t.match(page.headers.get('content-type'), /^text\/html/);
  t.match(page.text, /<h3>NIP-01/);
  t.match(page.text, /<span class="score">\d+<\/span>/);
  const browser = await app.request('GET', quickPath, { key: k.key, headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
  t.match(browser.headers.get('content-type'), /^text\/html/);
  const plain = await app.request('GET', quickPath, { key: k.key, headers: { accept: '*/*' } });
  t.match(plain.headers.get('content-type'), /json/);
  t.ok(validate(plain.json));
  const badFormat = await app.request('GET', `${quickPath}?format=pdf`, { key: k.key });
  t.equal(badFormat.status, 400, 'an unknown format is refused');

  const q2 = await app.request('POST', '/v1/labs/quote', { key: k.key, body: { relay: relay.url, modules: ['conformance'] } });
  t.same(
    q2.json.items.map((i: { key: string }) => i.key),
    ['conformance'],
    'no second dataset fee',
  );

  const before = await balance();
  const s = await app.request('POST', '/v1/labs/jobs?wait=25', { key: k.key, body: { relay: silent.url, modules: ['quick'] } });
  t.equal(s.status, 201, s.text);
  const sj = await finish(s.json.job);
  t.match(sj, { status: 'failed', charged: 0 });
  t.match(sj.results[0], { error: 'not_a_relay', refunded: true });
  t.equal(await balance(), before, 'refunded');

  const blocked = await app.request('POST', '/v1/labs/jobs', {
    key: k.key,
    body: { relay: 'ws://10.0.0.1:' + relay.port + '/', modules: ['quick'] },
  });
  t.equal(blocked.json?.error?.code, 'blocked_address', blocked.text);
  const badPort = await app.request('POST', '/v1/labs/jobs', {
    key: k.key,
    body: { relay: 'wss://relay.example.com:22', modules: ['quick'] },
  });
  t.equal(badPort.json?.error?.code, 'bad_port');
  const none = await app.request('POST', '/v1/labs/jobs', { key: k.key, body: { relay: relay.url } });
  t.equal(none.json?.error?.code, 'no_checks');

  // relayTestsPerHour = 4 and one test of this relay was made: 3 more, then relay_busy
  let last;
  for (let i = 0; i < 4; i++)
    last = await app.request('POST', '/v1/labs/jobs', { key: k.key, body: { relay: relay.url, checks: ['dns'] } });
  t.equal(last!.status, 429, last!.text);
  t.equal(last!.json.error.code, 'relay_busy');
  t.ok(Number(last!.headers.get('retry-after')) > 0);
});
