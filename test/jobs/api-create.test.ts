// Job creation over HTTP (real HTTP, wallet, supervisor, test workers).
import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { startJobsApi } from './app.ts';
import { fileContent } from '../helpers/test-worker.ts';
import { STREAMS } from '../../shared/names.ts';

t.test('create with wait: the finished job with every field, downloads, balance', async (t) => {
  const s = await startJobsApi(t);
  const { key, walletId } = await s.newWallet(1000);
  const r = await s.request('POST', '/v1/websitepro/jobs?wait=20', {
    key,
    body: { url: `${s.targetUrl}/?behave.pdf=fail`, outputs: ['markdown', 'pdf'] },
  });
  t.equal(r.status, 201, r.text);
  const { job, balance } = r.json;
  t.equal(job.status, 'completed');
  t.equal(job.service, 'websitepro');
  t.equal(job.target, '127.0.0.1');
  t.equal(job.cost, 130);
  t.equal(job.refunded, 100);
  t.equal(job.charged, 30);
  t.equal(balance, 970, 'the balance includes the refund that came in while waiting');
  t.ok(job.createdAt <= job.finishedAt && job.finishedAt < job.expiresAt);
  t.equal(job.expiresAt - job.createdAt, s.config.retention.websitepro * 1000);
  const [md, pdf] = job.results;
  t.match(md, {
    key: 'markdown',
    status: 'done',
    price: 30,
    refunded: false,
    contentType: 'text/plain; charset=utf-8',
    filename: 'markdown.txt',
    bytes: Buffer.byteLength(fileContent({ jobId: job.id, resultKey: 'markdown' })),
  });
  t.match(md.url, new RegExp(`^http://[^/]+/v1/jobs/${job.id}/results/markdown$`));
  t.match(pdf, { key: 'pdf', status: 'failed', price: 100, refunded: true, error: 'unreachable' });
  t.notOk(pdf.url);

  const dl = await s.request('GET', new URL(md.url).pathname, { key });
  t.equal(dl.status, 200);
  t.equal(dl.text, fileContent({ jobId: job.id, resultKey: 'markdown' }));
  t.equal(dl.headers.get('content-type'), 'text/plain; charset=utf-8');
  t.match(dl.headers.get('content-disposition'), /^attachment; filename="markdown\.txt"/);
  t.equal((await s.request('GET', `/v1/jobs/${job.id}/results/pdf`, { key })).json.error.code, 'not_found', 'a failed result has no file');
  t.equal((await s.request('GET', `/v1/jobs/${job.id}/results/nope`, { key })).json.error.code, 'not_found');
  t.equal((await s.request('GET', `/v1/jobs/${job.id}/results/markdown?thumb=1`, { key })).status, 404, 'no thumbs outside shots');
  t.equal((await s.request('GET', `/v1/jobs/${job.id}/results/markdown`)).status, 401);

  const got = await s.request('GET', `/v1/jobs/${job.id}`, { key });
  t.same(got.json, { job, balance: 970 });
  t.equal(await s.balance(walletId), 970);
  t.same(await s.violations(), []);
});
t.test('wait: non-integer is 400, large values are capped, 0 answers at once', async (t) => {
  const s = await startJobsApi(t, { limits: { maxWaitSeconds: 1 } });
  const { key, walletId } = await s.newWallet(1000);
  for (const w of ['1.5', 'abc', '-1']) {
    const r = await s.request('POST', `/v1/websitepro/jobs?wait=${w}`, { key, body: { url: s.targetUrl, outputs: ['text'] } });
    t.equal(r.status, 400, `wait=${w}`);
    t.equal(r.json.error.code, 'bad_request');
  }
  t.equal(await s.balance(walletId), 1000, 'rejected requests cost nothing');
  const t0 = Date.now();
  const r = await s.request('POST', '/v1/websitepro/jobs?wait=25', {
    key,
    body: { url: `${s.targetUrl}/?behave=hang`, outputs: ['text'] },
  });
  const took = Date.now() - t0;
  t.equal(r.status, 201);
  t.equal(r.json.job.status, 'processing');
  t.ok(took >= 900 && took < 4000, `held for the capped 1 s (took ${took} ms)`);
  const r0 = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: `${s.targetUrl}/?behave=hang`, outputs: ['text'] } });
  t.equal(r0.json.job.status, 'processing', 'no wait: answered right after creation, its tasks already out');
  t.equal(r0.json.balance, 1000 - 40);
});
t.test('insufficient funds: 402 with needed and balance, nothing written', async (t) => {
  const s = await startJobsApi(t);
  const { key, walletId } = await s.newWallet(50);
  const r = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: s.targetUrl, outputs: ['pdf'] } });
  t.equal(r.status, 402);
  t.match(r.json.error, { code: 'insufficient_funds', needed: 100, balance: 50 });
  t.equal(await s.balance(walletId), 50);
  const jsm = await jetstreamManager(s.nc);
  t.equal((await jsm.streams.info(STREAMS.jobs)).state.last_seq, 0);
  t.same(await s.violations(), []);
});
t.test("queue bound: 503 busy when a wallet's unfinished tasks exceed queueMax, nothing charged; other wallets go on", async (t) => {
  const s = await startJobsApi(t, { limits: { queueMax: 2 } }, { workers: false });
  const { key, walletId } = await s.newWallet(1000);
  const ok = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: s.targetUrl, outputs: ['text', 'markdown'] } });
  t.equal(ok.status, 201);
  const busy = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: s.targetUrl, outputs: ['text'] } });
  t.equal(busy.status, 503);
  t.equal(busy.json.error.code, 'busy');
  t.ok(busy.headers.get('retry-after'));
  t.equal(await s.balance(walletId), 1000 - 50, 'only the first job was charged');
  // another customer is not refused for this one's backlog
  const other = await s.newWallet(1000);
  const theirs = await s.request('POST', '/v1/websitepro/jobs', {
    key: other.key,
    body: { url: s.targetUrl, outputs: ['text', 'markdown'] },
  });
  t.equal(theirs.status, 201);
});
