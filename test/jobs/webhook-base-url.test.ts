// The result URLs in a job.finished webhook are the public URLs of the gateway that took the job,
// the same GET /v1/jobs/{id} shows: with PORT=0 and no BASE_URL (as every test app runs) the
// supervisor cannot derive them from its own configuration (it would say http://localhost:0).
import t from 'tap';
import { startJobsApi } from './app.ts';
import { makeCerts } from '../labs/fixtures/certs.ts';
import { startWebhookReceiver } from '../labs/fixtures/webhook-receiver.ts';

const certs = makeCerts(30);
t.teardown(() => certs.cleanup());
const hooks = { labs: { extraCaFile: certs.caFile }, webhooks: { retries: 2, backoffMs: 100, timeoutMs: 3000 } };

t.test("PORT=0, no BASE_URL: the webhook names the results at the gateway's real port", async (t) => {
  const s = await startJobsApi(t, hooks);
  t.equal(s.config.server.port, 0, 'the gateway picked its port');
  const rx = await startWebhookReceiver(certs, [200]);
  t.teardown(rx.close);
  const w = await s.newWallet(1000);
  const c = await s.request('POST', '/v1/websitepro/jobs?wait=20', {
    key: w.key,
    body: { url: s.targetUrl, outputs: ['text'], webhook: rx.url },
  });
  t.equal(c.status, 201);
  t.equal(c.json.job.status, 'completed');
  const end = Date.now() + 15_000;
  while (!rx.got.length && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
  t.equal(rx.got.length, 1, 'delivered');
  const sent = JSON.parse(rx.got[0]!.body).job.results[0].url as string;
  const shown = (await s.request('GET', `/v1/jobs/${c.json.job.id}`, { key: w.key })).json.job.results[0].url as string;
  t.notMatch(sent, /:0\//, 'not the unresolved port 0');
  t.equal(sent, shown, 'the URL GET /v1/jobs/{id} shows');
  const port = new URL(s.url).port;
  t.equal(new URL(sent).port, port, 'the port the gateway listens on');
  const file = await s.request('GET', new URL(sent).pathname, { key: w.key });
  t.equal(file.status, 200, 'and it serves the result');
});
