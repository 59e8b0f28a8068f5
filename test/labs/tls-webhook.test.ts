// TLS checks against a wss:// relay with a test CA, and webhook delivery to a local https receiver:
// signed (Ed25519 over "<timestamp>.<body>"), retried with backoff, refused for private addresses.
import t from 'tap';
import { makeCerts } from './fixtures/certs.ts';
import { startWebhookReceiver } from './fixtures/webhook-receiver.ts';
import { startMiniRelay } from './fixtures/mini-relay.ts';
import { probe, fastConfig } from './fixtures/probe.ts';
import { deliverWebhook, keyFromSeed, loadWebhookKey, verifyWebhook, WEBHOOK_HEADERS } from '../../shared/webhook.ts';

const certs = makeCerts(30);
t.teardown(() => certs.cleanup());

t.test('tls passes with a trusted certificate and fails without', async (t) => {
  const relay = await startMiniRelay({}, { tls: { key: certs.key, cert: certs.cert } });
  t.teardown(() => relay.close());
  t.match(relay.url, /^wss:/);
  const ok = await probe(relay.url, 'custom', ['tls', 'nip11-served'], { ca: certs.ca });
  t.equal(ok.status('tls'), 'pass', ok.report.checks[0]!.message);
  t.equal(ok.status('nip11-served'), 'pass', 'NIP-11 fetched over https');
  const untrusted = await probe(relay.url, 'custom', ['tls']);
  t.equal(untrusted.status('tls'), 'fail', untrusted.report.checks[0]!.message);
});

t.test('a certificate expiring within 14 days warns', async (t) => {
  const soon = makeCerts(5);
  t.teardown(() => soon.cleanup());
  const relay = await startMiniRelay({}, { tls: { key: soon.key, cert: soon.cert } });
  t.teardown(() => relay.close());
  const r = await probe(relay.url, 'custom', ['tls'], { ca: soon.ca });
  t.equal(r.status('tls'), 'warn', r.report.checks[0]!.message);
});

const receiver = (statuses: number[]) => startWebhookReceiver(certs, statuses);

const seed = 'a1'.repeat(32);

t.test('webhook: retried after a 503, signature verifies', async (t) => {
  const rx = await receiver([503, 200]);
  t.teardown(rx.close);
  const key = keyFromSeed(seed);
  const config = fastConfig({ webhookRetries: 3 });
  const r = await deliverWebhook({
    url: rx.url,
    payload: { type: 'labs.report', jobId: 'j1', resultKey: 'quick', report: { schema: 'labs.report/1' } },
    deliveryId: 'j1:quick',
    key,
    config,
    ca: certs.ca,
  });
  t.same({ delivered: r.delivered, attempts: r.attempts, status: r.status }, { delivered: true, attempts: 2, status: 200 });
  t.equal(rx.got.length, 2);
  const last = rx.got[1]!;
  const h = (n: string) => String(last.headers[n.toLowerCase()]);
  t.equal(h(WEBHOOK_HEADERS.publicKey), key.publicKeyHex);
  t.equal(h(WEBHOOK_HEADERS.delivery), 'j1:quick');
  t.equal(h(WEBHOOK_HEADERS.attempt), '2');
  t.ok(verifyWebhook(key.publicKeyHex, h(WEBHOOK_HEADERS.timestamp), last.body, h(WEBHOOK_HEADERS.signature)), 'signature verifies');
  t.notOk(
    verifyWebhook(key.publicKeyHex, h(WEBHOOK_HEADERS.timestamp), last.body.replace('quick', 'quack'), h(WEBHOOK_HEADERS.signature)),
    'a changed body does not verify',
  );
  t.equal(JSON.parse(last.body).jobId, 'j1');
  // receivers written before every service had webhooks read the X-Labs-* names: still sent, same values
  for (const [name, legacy] of [
    [WEBHOOK_HEADERS.signature, 'X-Labs-Signature'],
    [WEBHOOK_HEADERS.timestamp, 'X-Labs-Timestamp'],
    [WEBHOOK_HEADERS.publicKey, 'X-Labs-Key'],
    [WEBHOOK_HEADERS.delivery, 'X-Labs-Delivery'],
    [WEBHOOK_HEADERS.attempt, 'X-Labs-Attempt'],
  ]) {
    t.equal(h(legacy!), h(name!), `${legacy} carries ${name}`);
  }
});

t.test('webhook: gives up after the configured retries', async (t) => {
  const rx = await receiver([500, 500, 500, 500]);
  t.teardown(rx.close);
  const r = await deliverWebhook({
    url: rx.url,
    payload: {},
    deliveryId: 'x',
    key: keyFromSeed(seed),
    config: fastConfig({ webhookRetries: 2 }),
    ca: certs.ca,
  });
  t.same({ delivered: r.delivered, attempts: r.attempts, status: r.status }, { delivered: false, attempts: 3, status: 500 });
  t.equal(rx.got.length, 3);
});

t.test('webhook: a 4xx is not retried; TLS is verified', async (t) => {
  const rx = await receiver([404]);
  t.teardown(rx.close);
  const r = await deliverWebhook({
    url: rx.url,
    payload: {},
    deliveryId: 'x',
    key: keyFromSeed(seed),
    config: fastConfig({ webhookRetries: 3 }),
    ca: certs.ca,
  });
  t.equal(r.attempts, 1);
  const noCa = await deliverWebhook({
    url: rx.url,
    payload: {},
    deliveryId: 'y',
    key: keyFromSeed(seed),
    config: fastConfig({ webhookRetries: 0 }),
  });
  t.equal(noCa.delivered, false);
  t.match(noCa.error, /certificate|self.signed|issuer/i);
});

t.test('webhook: private addresses are refused without the test allow-list', async (t) => {
  const rx = await receiver([200]);
  t.teardown(rx.close);
  const r = await deliverWebhook({
    url: rx.url,
    payload: {},
    deliveryId: 'x',
    key: keyFromSeed(seed),
    config: fastConfig({ webhookRetries: 3 }, { outbound: { allowCidrs: [] } }),
    ca: certs.ca,
  });
  t.equal(r.delivered, false);
  t.equal(r.attempts, 1, 'not retried');
  t.equal(rx.got.length, 0, 'nothing reached the receiver');
});

t.test('webhook key: generated once into the data folder, stable', async (t) => {
  const config = fastConfig();
  const a = loadWebhookKey(config);
  const b = loadWebhookKey(config);
  t.equal(a.publicKeyHex, b.publicKeyHex);
  t.match(a.publicKeyHex, /^[0-9a-f]{64}$/);
  t.equal(loadWebhookKey(fastConfig({ webhookSigningKey: seed })).publicKeyHex, keyFromSeed(seed).publicKeyHex);
});
