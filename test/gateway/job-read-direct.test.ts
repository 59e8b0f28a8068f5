// GET /v1/jobs/{id} reads the job's document by direct get where the `jobs` bucket allows it (one
// replica: shared/nats/provision.ts `jobsReads`), skipping the JetStream API's request queue that a
// crawl keeps busy; every answer still holds each write to the job made before it.
import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { fixtureServer, html } from '../outbound/fixture-server.ts';
import { ARTICLE } from '../converter/pages.ts';
import { bucketConfigs, jobsReads } from '../../shared/nats/provision.ts';
import { testConfig } from '../helpers/nats.ts';

t.test('the jobs bucket allows direct gets with one replica only', async (t) => {
  const replicas = (n: number) => ({ ...testConfig(), nats: { ...testConfig().nats, replicas: n } });
  t.same(jobsReads(replicas(1)), { allow_direct: true });
  t.same(jobsReads(replicas(3)), { allow_direct: false }, 'a replica that lags could answer with an older revision');
  t.same(
    bucketConfigs(replicas(1))
      .filter((b) => b.direct)
      .map((b) => b.name),
    ['jobs'],
    'no other bucket',
  );
});

t.test('one replica: job reads are direct gets and see the job as the supervisor last wrote it', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] } },
  });
  const site = await fixtureServer(t, { '/post': html(ARTICLE) });
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 10_000, 'test');
  const r = await app.request('POST', '/v1/websitepro/jobs', { key: k.key, body: { url: site.url('/post'), outputs: ['markdown'] } });
  t.equal(r.status, 201, r.text);
  const id = r.json.job.id as string;
  const calls = { direct: 0, get: 0 };
  // a key's last value by direct get names it in the subject (`$JS.API.DIRECT.GET.KV_jobs.$KV.jobs.<id>`)
  const direct = app.nc.subscribe('$JS.API.DIRECT.GET.KV_jobs.>', { callback: () => void calls.direct++ });
  const get = app.nc.subscribe('$JS.API.STREAM.MSG.GET.KV_jobs', { callback: () => void calls.get++ });
  await app.nc.flush();
  let job = r.json.job;
  for (let i = 0; i < 200 && job.status !== 'completed' && job.status !== 'failed'; i++) {
    await new Promise((res) => setTimeout(res, 25));
    job = (await app.request('GET', `/v1/jobs/${id}`, { key: k.key })).json.job;
  }
  t.equal(job.status, 'completed', 'the finish is seen through direct gets');
  for (let i = 0; i < 5; i++) t.equal((await app.request('GET', `/v1/jobs/${id}`, { key: k.key })).json.job.status, 'completed');
  await app.nc.flush();
  direct.unsubscribe();
  get.unsubscribe();
  t.ok(calls.direct >= 6, `a direct get per read (${calls.direct}); fails while reads go through the JetStream API`);
  t.equal(calls.get, 0, 'no message get through the JetStream API');
});
