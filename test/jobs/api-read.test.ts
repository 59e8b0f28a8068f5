// Reading jobs: long poll, ownership, list, not_ready (real HTTP, wallet, supervisor, test workers).
import t from 'tap';
import { startJobsApi } from './app.ts';

t.test('long poll: returns early on completion, on timeout, and 404 for another key', async (t) => {
  const s = await startJobsApi(t);
  const { key } = await s.newWallet(1000);
  const other = await s.newWallet(1000);
  const c = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: `${s.targetUrl}/?behave=slow`, outputs: ['text'] } });
  const id = c.json.job.id;
  const t0 = Date.now();
  const r = await s.request('GET', `/v1/jobs/${id}?wait=20`, { key });
  const took = Date.now() - t0;
  t.equal(r.json.job.status, 'completed');
  t.ok(took < 8000, `returned on completion after ${took} ms, not after 20 s`);

  const h = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: `${s.targetUrl}/?behave=hang`, outputs: ['text'] } });
  const t1 = Date.now();
  const r2 = await s.request('GET', `/v1/jobs/${h.json.job.id}?wait=1`, { key });
  const took2 = Date.now() - t1;
  t.equal(r2.status, 200);
  t.ok(['queued', 'processing'].includes(r2.json.job.status));
  t.ok(took2 >= 900 && took2 < 4000, `timed out after ${took2} ms`);

  for (const path of [`/v1/jobs/${id}`, `/v1/jobs/${id}?wait=1`, `/v1/jobs/${id}/results/text`, `/v1/jobs/${id}/zip`]) {
    const x = await s.request('GET', path, { key: other.key });
    t.equal(x.status, 404, `another key: ${path}`);
    t.equal(x.json.error.code, 'not_found');
  }
  t.equal((await s.request('GET', '/v1/jobs/job_doesnotexist', { key })).status, 404);
  t.equal((await s.request('GET', '/v1/jobs/..%2F..', { key })).status, 404);
});
t.test('results: 409 while pending; list: own jobs only, newest first, limit', async (t) => {
  const s = await startJobsApi(t);
  const a = await s.newWallet(5000);
  const b = await s.newWallet(5000);
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await s.request('POST', '/v1/websitepro/jobs', {
      key: a.key,
      body: { url: `${s.targetUrl}/?behave=hang&i=${i}`, outputs: ['text'] },
    });
    ids.push(r.json.job.id);
  }
  await s.request('POST', '/v1/websitepro/jobs', { key: b.key, body: { url: s.targetUrl, outputs: ['text'] } });
  const pend = await s.request('GET', `/v1/jobs/${ids[0]}/results/text`, { key: a.key });
  t.equal(pend.status, 409);
  t.equal(pend.json.error.code, 'not_ready');
  // the list is a projection fed by a watch, synced with the bucket before it answers
  const list = await s.request('GET', '/v1/jobs', { key: a.key });
  t.same(
    list.json.jobs.map((j: { id: string }) => j.id),
    [...ids].reverse(),
    'newest first, only this key, the jobs just created included',
  );
  const lim = await s.request('GET', '/v1/jobs?limit=2', { key: a.key });
  t.same(
    lim.json.jobs.map((j: { id: string }) => j.id),
    [ids[2], ids[1]],
  );
  for (const l of ['0', '101', 'x']) t.equal((await s.request('GET', `/v1/jobs?limit=${l}`, { key: a.key })).status, 400, `limit=${l}`);
  t.equal((await s.request('GET', '/v1/jobs')).status, 401);
});
