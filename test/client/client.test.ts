// payloads-client against the running system (gateway, wallet, supervisor, test workers):
// createJob().wait(), events() with a resume, download(), typed errors, verifyWebhook().
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startJobsApi } from '../jobs/app.ts';
import { fileContent } from '../helpers/test-worker.ts';
import { createPayloadsClient, PayloadsError, verifyWebhook, type JobEvent } from '../../client/src/index.ts';
import { keyFromSeed, signedHeaders } from '../../shared/webhook.ts';

const dir = mkdtempSync(join(tmpdir(), 'payloads-client-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test('createJob().wait(), download, balance', async (t) => {
  const s = await startJobsApi(t);
  const w = await s.newWallet(1000);
  const c = createPayloadsClient({ baseUrl: s.url, key: w.key });
  const created = c.createJob('websitepro', { url: `${s.targetUrl}/?behave=slow`, outputs: ['text'] });
  const { job, balance } = await created;
  t.equal(balance, 980);
  t.ok(['queued', 'processing'].includes(job.status));
  const done = await created.wait();
  t.equal(done.status, 'completed');
  const path = join(dir, 'text.txt');
  const got = await c.download(done.results[0]!, path);
  t.equal(readFileSync(path, 'utf8'), fileContent({ jobId: job.id, resultKey: 'text' }));
  t.equal(got.bytes, done.results[0]!.bytes);
  t.equal((await c.balance()).balance, 980);
});

t.test('events(): the stream until the job; a resume from an id goes on from there', async (t) => {
  const s = await startJobsApi(t);
  const w = await s.newWallet(1000);
  const c = createPayloadsClient({ baseUrl: s.url, key: w.key });
  const { job } = await c.createJob('websitepro', { url: `${s.targetUrl}/?behave=progress`, outputs: ['text', 'html'] });
  const all: JobEvent[] = [];
  for await (const e of c.events(job.id)) all.push(e);
  t.same(all.map((e) => e.event).slice(-2), ['status', 'job']);
  t.ok(
    all.some((e) => e.event === 'progress'),
    'progress lines',
  );
  t.equal(all.at(-1)!.data.status, 'completed');
  const later: JobEvent[] = [];
  const from = all.findIndex((e) => e.event === 'result');
  for await (const e of c.events(job.id, { lastEventId: all[from]!.id })) later.push(e);
  t.same(
    later.map((e) => e.event),
    all
      .slice(from + 1)
      .filter((e) => e.event !== 'progress')
      .map((e) => e.event),
    'only what came after that event',
  );
});

t.test('errors come back typed with the API code', async (t) => {
  const s = await startJobsApi(t);
  const w = await s.newWallet(10);
  const bad = createPayloadsClient({ baseUrl: s.url, key: 'pk_nope' });
  const e1 = await bad.balance().catch((e) => e);
  t.ok(e1 instanceof PayloadsError);
  t.match(e1, { code: 'unauthorized', status: 401 });
  t.type(e1.requestId, 'string');
  const c = createPayloadsClient({ baseUrl: s.url, key: w.key });
  const e2 = await c.createJob('websitepro', { url: s.targetUrl, outputs: ['pdf'] }).then(
    () => null,
    (e) => e,
  );
  t.match(e2, { code: 'insufficient_funds', status: 402 });
  t.match(e2.details, { needed: 100, balance: 10 });
  const e3 = await c.job('job_missing').catch((e) => e);
  t.match(e3, { code: 'not_found', status: 404 });
  const e4 = await c.createJob('shots', { url: s.targetUrl, browsers: ['nosuch'] }).then(
    () => null,
    (e) => e,
  );
  t.match(e4, { code: 'unknown_browser', status: 400 });
  const e5 = await createPayloadsClient({ baseUrl: 'http://127.0.0.1:1', key: 'x' })
    .balance()
    .catch((e) => e);
  t.match(e5, { code: 'network', status: null });
  const e6 = await c.download({ url: undefined }, join(dir, 'x')).catch((e) => e);
  t.match(e6, { code: 'not_found' });
});

t.test('verifyWebhook checks what shared/webhook.ts signs', async (t) => {
  const key = keyFromSeed('e5'.repeat(32));
  const body = JSON.stringify({ type: 'job.finished', job: { id: 'j' } });
  const h = signedHeaders(key, body, 'j', 1);
  t.ok(verifyWebhook(body, h, key.publicKeyHex));
  t.ok(verifyWebhook(Buffer.from(body), new Headers(h), key.publicKeyHex), 'bytes and a Headers object');
  t.notOk(verifyWebhook(body + ' ', h, key.publicKeyHex));
  t.notOk(verifyWebhook(body, h, keyFromSeed('f6'.repeat(32)).publicKeyHex));
  t.notOk(verifyWebhook(body, signedHeaders(key, body, 'j', 1, Date.now() - 600_000), key.publicKeyHex), 'too old');
  t.notOk(verifyWebhook(body, {}, key.publicKeyHex));
});
