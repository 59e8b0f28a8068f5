// Issue 27 item 7: webhooks are Standard Webhooks (standardwebhooks.com). Before, one Ed25519 key
// signed every customer's deliveries over content that does not name the recipient, so a customer
// could replay a delivery it received to another customer's endpoint, and receivers had to copy our
// own snippet. Now `webhook-signature` carries `v1,` (HMAC-SHA256 under the key owner's own
// `whsec_` secret, shown by GET /v1/webhooks/secret) beside `v1a,` (the deployment's Ed25519 key),
// and a receiver written with the `standardwebhooks` package verifies our deliveries unchanged.
//
// The package is a devDependency; to run this where it is not installed yet:
//   npm install --no-save --prefix /tmp/swh standardwebhooks && NODE_PATH=/tmp/swh/node_modules npx tap test/security/webhooks.test.ts
import t from 'tap';
import { createRequire } from 'node:module';
import { startJobsApi } from '../jobs/app.ts';
import { makeCerts } from '../labs/fixtures/certs.ts';
import { startWebhookReceiver } from '../labs/fixtures/webhook-receiver.ts';
import { testConfig } from '../helpers/nats.ts';
import {
  deliverWebhook,
  keyFromSeed,
  verifyStandardWebhook,
  verifyWebhook as verifyLegacy,
  webhookSecret,
  WEBHOOK_HEADERS,
} from '../../shared/webhook.ts';
import { verifyWebhook } from '../../client/src/index.ts';

// through require, so NODE_PATH works too (ESM imports ignore it)
const { Webhook } = createRequire(import.meta.url)('standardwebhooks') as {
  Webhook: new (secret: string) => { verify(payload: string, headers: Record<string, string>): unknown };
};

const certs = makeCerts(30);
t.teardown(() => certs.cleanup());
const seed = 'e5'.repeat(32);
const key = keyFromSeed(seed);
const hooks = { labs: { extraCaFile: certs.caFile }, webhooks: { signingKey: seed, retries: 0, backoffMs: 100, timeoutMs: 3000 } };
const until = async <T>(f: () => Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> => {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
};
const verifies = (secret: string, body: string, headers: Record<string, string>) => {
  try {
    new Webhook(secret).verify(body, headers);
    return true;
  } catch {
    return false;
  }
};
const strings = (h: Record<string, unknown>) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), String(v)]));

t.test("a job webhook verifies with the standardwebhooks package under its owner's secret, and no other", async (t) => {
  const s = await startJobsApi(t, hooks);
  const rx = await startWebhookReceiver(certs, [200]);
  t.teardown(rx.close);
  const owner = await s.newWallet(1000);
  const stranger = await s.newWallet(1000);
  const secretRes = await s.request('GET', '/v1/webhooks/secret', { key: owner.key });
  t.equal(secretRes.status, 200, secretRes.text);
  const secret: string = secretRes.json.secret;
  t.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/, 'a whsec_ secret of 32 bytes');
  t.equal(secretRes.json.publicKey, key.publicKeyHex);
  const otherSecret: string = (await s.request('GET', '/v1/webhooks/secret', { key: stranger.key })).json.secret;
  t.not(otherSecret, secret, 'each key its own secret');
  t.equal((await s.request('GET', '/v1/webhooks/secret')).status, 401, "only to the key's owner");

  const c = await s.request('POST', '/v1/websitepro/jobs?wait=20', {
    key: owner.key,
    body: { url: s.targetUrl, outputs: ['metadata'], webhook: rx.url },
  });
  t.equal(c.status, 201, c.text);
  await until(
    async () => rx.got.length,
    (n) => n > 0,
  );
  const got = rx.got[0]!;
  const h = strings(got.headers);
  t.equal(h['webhook-id'], c.json.job.id, 'webhook-id: the delivery id, the same on every retry');
  t.match(h['webhook-signature'], /^v1,[A-Za-z0-9+/=]+ v1a,[A-Za-z0-9+/=]+$/);
  t.ok(verifies(secret, got.body, h), "the standardwebhooks package verifies it under the owner's secret");
  t.notOk(verifies(otherSecret, got.body, h), 'replayed to another customer, it verifies for none');
  t.notOk(verifies(secret, got.body.replace('completed', 'failed'), h), 'a changed body does not verify');
  t.notOk(verifies(secret, got.body, { ...h, 'webhook-id': 'job_other' }), 'nor another id');
  t.ok(verifyWebhook(got.body, h, secret), "the client's verifyWebhook: the same check");
  t.notOk(verifyWebhook(got.body, h, otherSecret));
  t.ok(verifyWebhook(got.body, h, key.publicKeyHex), "v1a, under the deployment's public key");
  t.ok(verifyStandardWebhook(key.publicKeyHex, h, got.body));
  // the deprecated headers, for one period
  t.ok(
    verifyLegacy(key.publicKeyHex, h[WEBHOOK_HEADERS.timestamp.toLowerCase()]!, got.body, h[WEBHOOK_HEADERS.signature.toLowerCase()]!),
    'X-Payloads-Signature still verifies',
  );
});

t.test('a labs-style delivery (deliverWebhook) carries the same headers, and the X-Labs-* ones', async (t) => {
  const rx = await startWebhookReceiver(certs, [200]);
  t.teardown(rx.close);
  const config = testConfig(hooks);
  const r = await deliverWebhook({
    url: rx.url,
    payload: { type: 'labs.report', jobId: 'job_x', resultKey: 'quick' },
    deliveryId: 'job_x:quick',
    key,
    walletId: 'w_labs',
    config,
    ca: certs.ca,
  });
  t.ok(r.delivered, JSON.stringify(r));
  const got = rx.got[0]!;
  const h = strings(got.headers);
  t.equal(h['webhook-id'], 'job_x:quick');
  t.ok(verifies(webhookSecret(key, 'w_labs'), got.body, h), "verifies under the wallet's secret");
  t.notOk(verifies(webhookSecret(key, 'w_other'), got.body, h));
  t.ok(h['x-labs-signature'] && h['x-payloads-signature'], 'the deprecated headers are still sent');
});

t.test('old timestamps are refused by the package and by the client', async (t) => {
  const { standardHeaders } = await import('../../shared/webhook.ts');
  const body = '{"type":"job.finished"}';
  const old = standardHeaders(key, 'w1', 'job_1', Math.floor(Date.now() / 1000) - 3600, body);
  t.notOk(verifies(webhookSecret(key, 'w1'), body, old));
  t.notOk(verifyWebhook(body, old, webhookSecret(key, 'w1')));
  const now = standardHeaders(key, 'w1', 'job_1', Math.floor(Date.now() / 1000), body);
  t.ok(verifies(webhookSecret(key, 'w1'), body, now));
});
