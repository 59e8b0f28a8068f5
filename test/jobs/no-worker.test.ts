// No charge without a worker (issue 20 item 1): a service with no live instance answers 503 before
// any charge (websitepro too, not only shots and labs); with no job-supervisor alive job creation
// answers 503 before charging; and results whose service lost every instance after creation fail
// as worker_lost and are refunded after jobs.noWorkerSeconds, not jobs.stuckSeconds.
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestApp } from '../helpers/app.ts';
import { advertise } from '../../shared/catalogue.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';

const target = createServer((_req, res) => res.end('<html><title>t</title><body>hello</body></html>'));
await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
t.teardown(() => new Promise((r) => target.close(r)));
const url = `http://127.0.0.1:${(target.address() as AddressInfo).port}/`;

t.test('websitepro with no converter running: 503, nothing charged', async (t) => {
  const app = await startTestApp(t, { actors: ['wallet', 'job-supervisor'] });
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 1000, 'test');
  const r = await app.request('POST', '/v1/websitepro/jobs', { key: k.key, body: { url, outputs: ['metadata'] } });
  t.equal(r.status, 503, r.text);
  t.equal(r.json?.error?.code, 'service_unavailable');
  const q = await app.request('POST', '/v1/websitepro/quote', { key: k.key, body: { url, outputs: ['metadata'] } });
  t.equal(q.status, 503, 'the quote says so too');
  t.equal((await wallet.balance(app.nc, k.walletId)).balance, 1000, 'nothing charged');
  const list = await app.request('GET', '/v1/jobs', { key: k.key });
  t.same(list.json.jobs, [], 'no job created');
});

t.test('no job-supervisor alive: 503 before the charge', async (t) => {
  const app = await startTestApp(t, { actors: ['wallet'] });
  const ad = await advertise(app.nc, 'websitepro', 'conv-1', () => ({ outputs: ['metadata'] }));
  t.teardown(() => ad.stop());
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 1000, 'test');
  const r = await app.request('POST', '/v1/websitepro/jobs', { key: k.key, body: { url, outputs: ['metadata'] } });
  t.equal(r.status, 503, r.text);
  t.equal(r.json?.error?.code, 'service_unavailable');
  t.match(r.json?.error?.message, /supervisor/);
  t.equal((await wallet.balance(app.nc, k.walletId)).balance, 1000, 'nothing charged');
  t.same((await audit(app.nc)).violations, []);
});

t.test('every worker of the service gone after creation: worker_lost and refunded after noWorkerSeconds', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor'],
    config: { jobs: { noWorkerSeconds: 2 }, retention: { sweepSeconds: 0.3 } },
  });
  const ad = await advertise(app.nc, 'websitepro', 'conv-1', () => ({ outputs: ['metadata'] }));
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 1000, 'test');
  const r = await app.request('POST', '/v1/websitepro/jobs', { key: k.key, body: { url, outputs: ['metadata', 'text'] } });
  t.equal(r.status, 201, r.text);
  t.equal((await wallet.balance(app.nc, k.walletId)).balance, 1000 - 40, 'charged at creation');
  await ad.stop(); // the only converter is gone; nobody takes the tasks
  let job = r.json.job;
  for (let i = 0; i < 10 && (job.status === 'queued' || job.status === 'processing'); i++) {
    job = (await app.request('GET', `/v1/jobs/${job.id}?wait=5`, { key: k.key })).json.job;
  }
  t.equal(job.status, 'failed');
  t.ok(
    job.results.every(
      (x: { status: string; error: string; refunded: boolean }) => x.status === 'failed' && x.error === 'worker_lost' && x.refunded,
    ),
    'every result worker_lost, refunded',
  );
  t.equal((await wallet.balance(app.nc, k.walletId)).balance, 1000, 'all refunded');
  t.same((await audit(app.nc)).violations, []);
});

t.test("shots: the pool of one browser gone while another pool runs: only that browser's results fail", async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor'],
    config: { jobs: { noWorkerSeconds: 2 }, retention: { sweepSeconds: 0.3 } },
  });
  const offer = (id: string) => ({ browsers: [{ id, name: id, engine: 'chromium', versions: ['1'] }] });
  const poolA = await advertise(app.nc, 'shots', 'pool-a', () => offer('alpha'));
  t.teardown(() => poolA.stop());
  const poolB = await advertise(app.nc, 'shots', 'pool-b', () => offer('beta'));
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 1000, 'test');
  const r = await app.request('POST', '/v1/shots/jobs', { key: k.key, body: { url, browsers: ['alpha', 'beta'] } });
  t.equal(r.status, 201, r.text);
  await poolB.stop(); // no worker serves beta any more; alpha's pool is alive (just slow)
  let job = r.json.job;
  const beta = () => job.results.find((x: { key: string }) => x.key.startsWith('beta'));
  for (let i = 0; i < 40 && beta().status === 'pending'; i++) {
    await new Promise((res) => setTimeout(res, 250));
    job = (await app.request('GET', `/v1/jobs/${job.id}`, { key: k.key })).json.job;
  }
  t.match(beta(), { status: 'failed', error: 'worker_lost' }, 'beta failed (refunded when the job settles)');
  t.match(
    job.results.find((x: { key: string }) => x.key.startsWith('alpha')),
    { status: 'pending' },
    'alpha still waits for its live pool',
  );
  t.equal(job.status, 'processing');
  await poolA.stop();
  for (let i = 0; i < 10 && job.status === 'processing'; i++)
    job = (await app.request('GET', `/v1/jobs/${job.id}?wait=5`, { key: k.key })).json.job;
  t.match(job, { status: 'failed', charged: 0 }, "alpha's pool gone too: the job fails and costs nothing");
  t.equal((await wallet.balance(app.nc, k.walletId)).balance, 1000);
  t.same((await audit(app.nc)).violations, []);
});
