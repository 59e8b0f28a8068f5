// Webhooks of websitepro and shots jobs through the real gateway, supervisor, wallet and test
// workers, delivered to a local https receiver (test CA): signed with the labs key and headers,
// retried with backoff, every attempt in the job document; refused at creation when not https or
// not public (the outbound guard), nothing charged.
import t from 'tap';
import { startJobsApi } from './app.ts';
import { makeCerts } from '../labs/fixtures/certs.ts';
import { startWebhookReceiver } from '../labs/fixtures/webhook-receiver.ts';
import { Kvm } from '@nats-io/kv';
import { keyFromSeed, verifyWebhook, WEBHOOK_HEADERS } from '../../shared/webhook.ts';
import { updateJob } from '../../shared/jobs/store.ts';
import { BUCKETS } from '../../shared/names.ts';

const certs = makeCerts(30);
t.teardown(() => certs.cleanup());
const seed = 'b2'.repeat(32);
const key = keyFromSeed(seed);
const hooks = {
  labs: { extraCaFile: certs.caFile, webhookSigningKey: seed, webhookRetries: 2, webhookBackoffMs: 100, webhookTimeoutMs: 3000 },
};

const until = async <T>(f: () => Promise<T>, ok: (v: T) => boolean, ms = 15_000): Promise<T> => {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
};

t.test('a finished websitepro job is posted once, signed; the job document shows the delivery', async (t) => {
  const s = await startJobsApi(t, hooks);
  const rx = await startWebhookReceiver(certs, [200]);
  t.teardown(rx.close);
  const w = await s.newWallet(1000);
  const c = await s.request('POST', '/v1/websitepro/jobs?wait=20', {
    key: w.key,
    body: { url: s.targetUrl, outputs: ['text', 'metadata'], webhook: rx.url },
  });
  t.equal(c.status, 201);
  const id = c.json.job.id;
  t.equal(c.json.job.status, 'completed');
  const r = await until(
    () => s.request('GET', `/v1/jobs/${id}`, { key: w.key }),
    (x) => x.json.job.webhook?.state === 'delivered',
  );
  t.match(r.json.job.webhook, { url: rx.url, state: 'delivered', tries: 1 });
  t.equal(r.json.job.webhook.attempts.length, 1);
  t.equal(r.json.job.webhook.attempts[0].status, 200);
  t.equal(rx.got.length, 1);
  const got = rx.got[0]!;
  const h = (n: string) => String(got.headers[n.toLowerCase()]);
  t.equal(h(WEBHOOK_HEADERS.publicKey), key.publicKeyHex, 'the one signing key');
  t.equal(h(WEBHOOK_HEADERS.delivery), id);
  t.ok(verifyWebhook(key.publicKeyHex, h(WEBHOOK_HEADERS.timestamp), got.body, h(WEBHOOK_HEADERS.signature)), 'signature verifies');
  t.notOk(
    verifyWebhook(key.publicKeyHex, h(WEBHOOK_HEADERS.timestamp), got.body.replace('completed', 'failed'), h(WEBHOOK_HEADERS.signature)),
    'a changed body does not',
  );
  const payload = JSON.parse(got.body);
  t.equal(payload.type, 'job.finished');
  t.match(payload.job, { id, service: 'websitepro', status: 'completed' });
  t.same(payload.job.results.map((x: any) => x.status).sort(), ['done', 'done']);
});

t.test('shots: retried after 503s with backoff, every attempt recorded; a 4xx is not retried', async (t) => {
  const s = await startJobsApi(t, hooks);
  const w = await s.newWallet(2000);
  const rx = await startWebhookReceiver(certs, [503, 503, 200]);
  t.teardown(rx.close);
  const c = await s.request('POST', '/v1/shots/jobs?wait=20', {
    key: w.key,
    body: { url: s.targetUrl, browsers: ['testbrowser'], webhook: rx.url },
  });
  t.equal(c.status, 201);
  t.equal(
    c.json.job.webhook.state === 'waiting' || c.json.job.webhook.state === 'pending' || c.json.job.webhook.state === 'delivered',
    true,
  );
  const r = await until(
    () => s.request('GET', `/v1/jobs/${c.json.job.id}`, { key: w.key }),
    (x) => ['delivered', 'failed'].includes(x.json.job.webhook?.state),
  );
  t.equal(r.json.job.webhook.state, 'delivered');
  t.same(
    r.json.job.webhook.attempts.map((a: any) => a.status),
    [503, 503, 200],
  );
  t.same(
    rx.got.map((g) => g.headers[WEBHOOK_HEADERS.attempt.toLowerCase()]),
    ['1', '2', '3'],
  );
  const gaps = r.json.job.webhook.attempts.slice(1).map((a: any, i: number) => a.at - r.json.job.webhook.attempts[i].at);
  // each retry waits at least its backoff, doubled each time (100 ms, then 200 ms); a loaded machine
  // only makes a gap longer, so the two gaps are not compared with each other
  t.ok(gaps[0] >= 100 && gaps[1] >= 200, `backoff doubles: ${gaps}`);

  const rx4 = await startWebhookReceiver(certs, [410]);
  t.teardown(rx4.close);
  const c4 = await s.request('POST', '/v1/shots/jobs?wait=20', {
    key: w.key,
    body: { url: s.targetUrl, browsers: ['testbrowser'], webhook: rx4.url },
  });
  const r4 = await until(
    () => s.request('GET', `/v1/jobs/${c4.json.job.id}`, { key: w.key }),
    (x) => ['delivered', 'failed'].includes(x.json.job.webhook?.state),
  );
  t.match(r4.json.job.webhook, { state: 'failed', tries: 1 });
  t.equal(rx4.got.length, 1);
});

t.test('retries used up: failed after 1 + retries attempts; the job itself stays completed', async (t) => {
  const s = await startJobsApi(t, hooks);
  const w = await s.newWallet(1000);
  const rx = await startWebhookReceiver(certs, [500, 500, 500, 500]);
  t.teardown(rx.close);
  const c = await s.request('POST', '/v1/websitepro/jobs?wait=20', {
    key: w.key,
    body: { url: s.targetUrl, outputs: ['text'], webhook: rx.url },
  });
  const r = await until(
    () => s.request('GET', `/v1/jobs/${c.json.job.id}`, { key: w.key }),
    (x) => ['delivered', 'failed'].includes(x.json.job.webhook?.state),
  );
  t.match(r.json.job, { status: 'completed', webhook: { state: 'failed', tries: 3 } });
  t.equal(rx.got.length, 3);
  t.equal(await s.balance(w.walletId), 1000 - 20, 'the webhook costs nothing and refunds nothing');
});

t.test('bad webhooks are refused at creation with bad_webhook, nothing charged', async (t) => {
  // the target on 127.0.0.1 is allowed; nothing else that is not public is
  const s = await startJobsApi(t, { ...hooks, outbound: { allowCidrs: ['127.0.0.1/32'] } });
  const w = await s.newWallet(1000);
  const cases: [unknown, string][] = [
    ['http://example.com/hook', 'not https'],
    ['https://user:pw@example.com/hook', 'credentials'],
    ['not a url', 'not a URL'],
    [42, 'not a string'],
    ['https://10.1.2.3/hook', 'private address (outbound guard)'],
    ['https://[::1]:9/hook', 'loopback (outbound guard)'],
  ];
  for (const [webhook, why] of cases) {
    for (const [service, body] of [
      ['websitepro', { url: s.targetUrl, outputs: ['text'] }],
      ['shots', { url: s.targetUrl, browsers: ['testbrowser'] }],
    ] as const) {
      const r = await s.request('POST', `/v1/${service}/jobs`, { key: w.key, body: { ...body, webhook } });
      t.equal(r.status, 400, `${service}: ${why}`);
      t.equal(r.json?.error?.code, 'bad_webhook', `${service}: ${why}: ${r.json?.error?.message}`);
    }
  }
  t.equal(await s.balance(w.walletId), 1000, 'nothing charged');
  const q = await s.request('POST', '/v1/shots/quote', {
    key: w.key,
    body: { url: s.targetUrl, browsers: ['testbrowser'], webhook: 'http://x.example/' },
  });
  t.equal(q.json?.error?.code, 'bad_webhook', 'the quote validates it the same way');
});

t.test('a delivery whose supervisor died is picked up by the sweep once its claim ends', async (t) => {
  const s = await startJobsApi(t, { ...hooks, retention: { sweepSeconds: 0.3 } });
  const w = await s.newWallet(1000);
  const rx = await startWebhookReceiver(certs, [200]);
  t.teardown(rx.close);
  const c = await s.request('POST', '/v1/websitepro/jobs?wait=20', { key: w.key, body: { url: s.targetUrl, outputs: ['text'] } });
  t.equal(c.json.job.status, 'completed');
  const id = c.json.job.id;
  // as a supervisor leaves it when it dies during its first attempt
  const claimUntil = Date.now() + 1500;
  const jobs = await new Kvm(s.nc).open(BUCKETS.jobs);
  await updateJob(jobs, id, (j) => {
    j.webhook = { url: rx.url, state: 'pending', tries: 0, attempts: [], nextAt: Date.now(), claimedBy: 'a-dead-supervisor', claimUntil };
    return true;
  });
  const r = await until(
    () => s.request('GET', `/v1/jobs/${id}`, { key: w.key }),
    (x) => x.json.job.webhook?.state === 'delivered',
  );
  t.equal(r.json.job.webhook.state, 'delivered');
  t.equal(rx.got.length, 1, 'sent once');
  t.ok(r.json.job.webhook.attempts[0].at >= claimUntil, 'not before the dead claim ended');
});
