// A prober stopped between two attempts of a report's webhook gives the delivery up at once and
// says so in the job document (state failed), instead of leaving it pending for ever.
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

t.test("stopped while waiting to retry: the result's webhook is failed with the one attempt made", async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor'],
    config: {
      labs: { ...fastLabs, extraCaFile: certs.caFile, allowedPorts: [relay.port] },
      webhooks: { ...fastWebhooks, retries: 3, backoffMs: 120_000 },
    },
  });
  const prober = await app.startActor('relay-prober');
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 10_000, 'test');
  const rx = await startWebhookReceiver(certs, [503, 503, 503, 503]);
  t.teardown(rx.close);
  const c = await app.request('POST', '/v1/labs/jobs', { key: k.key, body: { relay: relay.url, modules: ['quick'], webhook: rx.url } });
  t.equal(c.status, 201, c.text);
  const get = async () =>
    (await app.request('GET', `/v1/jobs/${c.json.job.id}`, { key: k.key })).json.job.results.find((r: any) => r.key === 'quick');
  let quick = await get();
  for (let i = 0; i < 300 && !(quick.webhook?.tries === 1); i++) {
    await new Promise((r) => setTimeout(r, 100));
    quick = await get();
  }
  t.match(
    quick.webhook,
    { state: 'pending', tries: 1, attempts: [{ status: 503 }] },
    'the first attempt got a 503; the next is two minutes away',
  );
  t.ok(quick.webhook.nextAttemptAt > Date.now(), 'nextAttemptAt is ahead');
  await prober.stop();
  quick = await get();
  t.match(quick.webhook, { state: 'failed', tries: 1 }, 'given up, and said so');
  t.notOk('nextAttemptAt' in quick.webhook);
  t.equal(rx.got.length, 1, 'no attempt after the stop');
});
