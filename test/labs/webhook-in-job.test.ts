// Labs reports are posted to the webhook by the prober, once per result; every attempt is written to
// that result's `webhook` in the job document, so GET /v1/jobs/{id} shows the delivery as it does
// the job webhook of websitepro and shots.
import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { startMiniRelay } from './fixtures/mini-relay.ts';
import { fastLabs, fastWebhooks } from './fixtures/probe.ts';
import { makeCerts } from './fixtures/certs.ts';
import { startWebhookReceiver } from './fixtures/webhook-receiver.ts';

const certs = makeCerts(30);
t.teardown(() => certs.cleanup());
const relay = await startMiniRelay({});
t.teardown(() => relay.close());

const app = await startTestApp(t, {
  actors: ['wallet', 'job-supervisor', 'relay-prober'],
  config: { labs: { ...fastLabs, extraCaFile: certs.caFile, allowedPorts: [relay.port] }, webhooks: { ...fastWebhooks, retries: 2 } },
});
const k = await app.newKey();
await wallet.grant(app.nc, k.walletId, 100_000, 'test');

/** The job once every result's webhook has stopped being pending. */
async function settled(id: string, withWebhook = true) {
  const end = Date.now() + 60_000;
  for (;;) {
    const job = (await app.request('GET', `/v1/jobs/${id}?wait=5`, { key: k.key })).json.job;
    const hooks = job.results.filter((r: any) => r.key !== 'dataset').map((r: any) => r.webhook?.state);
    if (
      (job.status === 'completed' || job.status === 'failed') &&
      (!withWebhook || hooks.every((s: string) => s === 'delivered' || s === 'failed'))
    )
      return job;
    if (Date.now() > end) return job;
    await new Promise((r) => setTimeout(r, 200));
  }
}

t.test("a report delivered after a 503: both attempts in the result's webhook", async (t) => {
  const rx = await startWebhookReceiver(certs, [503, 200]);
  t.teardown(rx.close);
  const c = await app.request('POST', '/v1/labs/jobs', { key: k.key, body: { relay: relay.url, modules: ['quick'], webhook: rx.url } });
  t.equal(c.status, 201, c.text);
  const job = await settled(c.json.job.id);
  t.equal(job.status, 'completed');
  const quick = job.results.find((r: any) => r.key === 'quick');
  t.match(quick.webhook, { url: rx.url, state: 'delivered', tries: 2 });
  t.same(
    quick.webhook.attempts.map((a: any) => a.status),
    [503, 200],
  );
  t.ok(quick.webhook.attempts[1].at >= quick.webhook.attempts[0].at + fastWebhooks.backoffMs, 'the retry waited its backoff');
  t.notOk('nextAttemptAt' in quick.webhook, 'nothing more is due');
  t.notOk(job.webhook, 'no job-level webhook for labs: reports are sent per result');
  t.equal(rx.got.length, 2);
  t.same(
    rx.got.map((g) => JSON.parse(g.body).type),
    ['labs.report', 'labs.report'],
    'only the report, no job.finished',
  );
});

t.test('a report refused with a 4xx: failed after one attempt, seen in the job', async (t) => {
  const rx = await startWebhookReceiver(certs, [410]);
  t.teardown(rx.close);
  const c = await app.request('POST', '/v1/labs/jobs', { key: k.key, body: { relay: relay.url, modules: ['quick'], webhook: rx.url } });
  t.equal(c.status, 201, c.text);
  const job = await settled(c.json.job.id);
  const quick = job.results.find((r: any) => r.key === 'quick');
  t.match(quick.webhook, { state: 'failed', tries: 1, attempts: [{ status: 410 }] });
  t.equal(quick.status, 'done', 'the report itself is delivered (and charged) all the same');
  t.equal(quick.refunded, false);
});

t.test('no webhook asked for: no webhook on the results', async (t) => {
  const c = await app.request('POST', '/v1/labs/jobs?wait=25', { key: k.key, body: { relay: relay.url, modules: ['quick'] } });
  t.equal(c.status, 201, c.text);
  const job = await settled(c.json.job.id, false);
  t.equal(job.status, 'completed');
  t.notOk(job.results.some((r: any) => 'webhook' in r));
});
