// A page set (websitepro `urls`) is archived like every job once its results expired: its files are
// deleted (they are not listed in its document: the purge lists the store under `<jobId>/`), its
// document leaves the bucket for the archive and is still read with its counts, the audit is clean.
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { Objm } from '@nats-io/obj';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { BUCKETS, OBJECT_STORES } from '../../shared/names.ts';
import { jobDocumentInBucketMs } from '../../shared/jobs/retention.ts';
import { fixtureServer, html } from '../outbound/fixture-server.ts';

t.test('a page set is purged and archived like any job', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: {
      outbound: { allowCidrs: ['127.0.0.1/32'] },
      retention: { websitepro: 10, sweepSeconds: 0.3, jobRecords: 3600 },
    },
  });
  const site = await fixtureServer(t, {
    '/a': html('<html><title>A</title><body><p>A</p></body></html>'),
    '/b': html('<html><title>B</title><body><p>B</p></body></html>'),
  });
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 1000, 'test');
  const r = await app.request('POST', '/v1/websitepro/jobs?wait=20', {
    key: k.key,
    body: { urls: [site.url('/a'), site.url('/b'), site.url('/nope')], outputs: ['text'] },
  });
  t.equal(r.status, 201, r.text);
  let job = r.json.job;
  for (let i = 0; i < 5 && job.status === 'processing'; i++)
    job = (await app.request('GET', `/v1/jobs/${job.id}?wait=20`, { key: k.key })).json.job;
  t.equal(job.status, 'completed');
  t.equal(job.charged, 40);
  const store = await new Objm(app.nc).open(OBJECT_STORES.results);
  const files = async () => (await store.list()).filter((o) => !o.deleted && o.name.startsWith(`${job.id}/`)).map((o) => o.name);
  t.same((await files()).sort(), [`${job.id}/a/text`, `${job.id}/b/text`]);

  const kv = await new Kvm(app.nc).open(BUCKETS.jobs);
  for (let i = 0; i < 150 && (await kv.get(job.id)) !== null; i++) await new Promise((res) => setTimeout(res, 200));
  t.equal(await kv.get(job.id), null, 'archived: gone from the bucket');
  t.same(await files(), [], 'its files deleted');
  const got = await app.request('GET', `/v1/jobs/${job.id}`, { key: k.key });
  t.equal(got.status, 200);
  t.match(got.json.job, { status: 'completed', charged: 40, resultCount: 3, pages: { total: 3, done: 2, failed: 1 } });
  const dl = await app.request('GET', `/v1/jobs/${job.id}/results/${encodeURIComponent('a/text')}`, { key: k.key });
  t.equal(dl.status, 410, 'its results answer expired');
  t.same((await audit(app.nc, { keptMs: jobDocumentInBucketMs(app.config) })).violations, [], 'audit clean with the archived document');
});
