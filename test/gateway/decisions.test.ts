// docs/decisions.md ("Decisions where the spec is silent") pinned (issue 20 item 8): unknown body fields,
// the array and URL caps, the viewport range of the WIDTHxHEIGHT form, 429 on quote, the top-up's
// createdAt and paidAt. Real gateway, wallet, supervisor, catalogues as the workers advertise them.
import t from 'tap';
import { startJobsApi } from '../jobs/app.ts';
import { advertise } from '../../shared/catalogue.ts';
import { labsCatalogue } from '../../actors/relay-prober/index.ts';
import { keyFromSeed } from '../../shared/webhook.ts';

const s = await startJobsApi(t, { wallet: { keyPowBits: 4 } });
const ad = await advertise(s.nc, 'labs', 'decisions-test', () => labsCatalogue(s.config, keyFromSeed('c3'.repeat(32))));
t.teardown(() => ad.stop());
const { key } = await s.newWallet(100_000);
const long = (prefix: string) => prefix + 'a'.repeat(2049 - prefix.length);

const codeOf = async (service: string, body: unknown, what = 'quote') => {
  const r = await s.request('POST', `/v1/${service}/${what}`, { key, body });
  return r.status === 200 || r.status === 201 ? r.status : `${r.status} ${r.json?.error?.code}`;
};

t.test('unknown body fields are refused with 400 bad_request, at any depth', async (t) => {
  const web = { url: s.targetUrl, outputs: ['metadata'] };
  const shot = { url: s.targetUrl, browsers: ['testbrowser'] };
  const lab = { relay: 'wss://relay.example.com', modules: ['quick'] };
  t.equal(await codeOf('websitepro', web), 200, 'the valid body is accepted');
  for (const [service, body] of [
    ['websitepro', web],
    ['shots', shot],
    ['labs', lab],
  ] as const) {
    for (const what of ['quote', 'jobs'])
      t.equal(await codeOf(service, { ...body, colour: 'red' }, what), '400 bad_request', `${service} ${what}`);
  }
  t.equal(await codeOf('shots', { ...shot, options: { fullPage: true, zoom: 2 } }), '400 bad_request', 'inside options');
  t.equal(
    await codeOf('shots', { ...shot, browsers: [{ id: 'testbrowser', versions: ['2'], os: 'x' }] }),
    '400 unknown_browser',
    'inside a browser item (it no longer matches either form)',
  );
});

t.test('array caps and the URL length cap', async (t) => {
  t.equal(await codeOf('websitepro', { url: s.targetUrl, outputs: Array(9).fill('metadata') }), '400 bad_request', 'outputs: at most 8');
  t.equal(await codeOf('websitepro', { url: s.targetUrl, outputs: Array(8).fill('metadata') }), 200, '8 (duplicates count once)');
  const shot = (extra: object) => ({ url: s.targetUrl, browsers: ['testbrowser'], ...extra });
  t.equal(await codeOf('shots', shot({ browsers: Array(21).fill('testbrowser') })), '400 bad_request', 'browsers: at most 20');
  t.equal(
    await codeOf('shots', shot({ browsers: [{ id: 'testbrowser', versions: Array(11).fill('2') }] })),
    '400 bad_request',
    'versions: at most 10',
  );
  t.equal(await codeOf('shots', shot({ schemes: ['light', 'dark', 'light'] })), '400 bad_request', 'schemes: at most 2');
  t.equal(await codeOf('shots', shot({ viewports: ['hd', 'fhd', 'qhd', 'phone'] })), '400 bad_viewport', 'viewports: at most 3 (spec)');
  t.equal(
    await codeOf('labs', { relay: 'wss://relay.example.com', modules: ['quick', 'conformance', 'quick'] }),
    '400 bad_request',
    'modules: at most 2',
  );
  t.equal(
    await codeOf('labs', { relay: 'wss://relay.example.com', checks: Array(201).fill('dns') }),
    '400 bad_request',
    'checks: at most 200',
  );
  t.equal(
    await codeOf('websitepro', { url: long('http://example.com/'), outputs: ['metadata'] }),
    '400 bad_url',
    'url: at most 2048 characters',
  );
  t.equal(await codeOf('shots', shot({ url: long('http://example.com/') })), '400 bad_url');
  t.equal(await codeOf('labs', { relay: long('wss://relay.example.com/'), modules: ['quick'] }), '400 bad_relay_url');
  t.equal(
    await codeOf('labs', { relay: 'wss://relay.example.com', modules: ['quick'], webhook: long('https://hook.example.com/') }),
    '400 bad_webhook',
  );
});

t.test('the viewport range applies to the WIDTHxHEIGHT form as to {w, h}', async (t) => {
  const vp = (v: unknown) => codeOf('shots', { url: s.targetUrl, browsers: ['testbrowser'], viewports: [v] });
  for (const ok of ['320x320', '3840x2400', '320x2400', '3840x320']) t.equal(await vp(ok), 200, ok);
  for (const bad of ['319x600', '3841x600', '800x319', '800x2401', '0x0', '800x600x2', '800X600'])
    t.equal(await vp(bad), '400 bad_viewport', bad);
  t.equal(await vp({ w: 319, h: 600 }), '400 bad_viewport', '{w, h} below the range');
});

t.test('a top-up carries createdAt, and paidAt once paid', async (t) => {
  const w = await s.newWallet(0);
  const made = await s.request('POST', '/v1/topups', { key: w.key, body: { eur: 1 } });
  t.equal(made.status, 201, made.text);
  t.type(made.json.topup.createdAt, 'number');
  t.notOk('paidAt' in made.json.topup, 'no paidAt while pending');
  const paid = await s.request('POST', '/account/dev-pay', { key: w.key, body: { topupId: made.json.topup.id } });
  t.equal(paid.status, 200, paid.text);
  const got = await s.request('GET', `/v1/topups/${made.json.topup.id}`, { key: w.key });
  t.equal(got.json.topup.status, 'paid');
  t.ok(got.json.topup.paidAt >= got.json.topup.createdAt, 'paidAt after createdAt');
});

t.test('quote is rate limited like every request of a key: 429 rate_limited with Retry-After', async (t) => {
  const app = await startJobsApi(t, { server: { keyRequestsPerMinute: 3 } });
  const k = await app.newWallet(1000);
  const statuses: number[] = [];
  let last: Awaited<ReturnType<typeof app.request>> | undefined;
  for (let i = 0; i < 5; i++) {
    last = await app.request('POST', '/v1/websitepro/quote', { key: k.key, body: { url: app.targetUrl, outputs: ['metadata'] } });
    statuses.push(last.status);
  }
  t.same(statuses, [200, 200, 200, 429, 429]);
  t.equal(last!.json.error.code, 'rate_limited');
  t.ok(Number(last!.headers.get('retry-after')) >= 1);
});
