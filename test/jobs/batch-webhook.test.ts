// A page set's webhook (websitepro `urls`): posted once, when the job is finished (not per page),
// carrying the job as GET /v1/jobs/{id} shows it: its results inline and the counts.
import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { makeCerts } from '../labs/fixtures/certs.ts';
import { startWebhookReceiver } from '../labs/fixtures/webhook-receiver.ts';
import { fixtureServer, html } from '../outbound/fixture-server.ts';

const certs = makeCerts(30);
t.teardown(() => certs.cleanup());

t.test('a page set posts its webhook once, at the end, with its results', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: {
      outbound: { allowCidrs: ['127.0.0.1/32'] },
      labs: { extraCaFile: certs.caFile, webhookSigningKey: 'b2'.repeat(32), webhookRetries: 1, webhookBackoffMs: 100 },
    },
  });
  const rx = await startWebhookReceiver(certs, [200]);
  t.teardown(rx.close);
  const site = await fixtureServer(
    t,
    Object.fromEntries(['/a', '/b', '/c'].map((p) => [p, html(`<html><title>${p}</title><body><p>${p}</p></body></html>`)])),
  );
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 1000, 'test');
  const r = await app.request('POST', '/v1/websitepro/jobs?wait=20', {
    key: k.key,
    body: { urls: ['/a', '/b', '/c'].map((p) => site.url(p)), outputs: ['text', 'markdown'], webhook: rx.url },
  });
  t.equal(r.status, 201, r.text);
  let job = r.json.job;
  for (let i = 0; i < 50 && job.webhook?.state !== 'delivered'; i++) {
    await new Promise((res) => setTimeout(res, 200));
    job = (await app.request('GET', `/v1/jobs/${job.id}`, { key: k.key })).json.job;
  }
  t.equal(job.webhook?.state, 'delivered');
  await new Promise((res) => setTimeout(res, 500));
  t.equal(rx.got.length, 1, 'one delivery for the whole job');
  const payload = JSON.parse(rx.got[0]!.body);
  t.match(payload, { type: 'job.finished', job: { id: job.id, status: 'completed', resultCount: 6, pages: { total: 3, done: 6 } } });
  t.equal(payload.job.results.length, 6, 'its results inline');
  t.notOk('resultsNext' in payload.job, 'all inline: no cursor');
});
