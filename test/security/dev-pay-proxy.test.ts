// Issue 44 item 7: the default start is development mode with the dev Lightning backend, and the
// dev-pay guard looked only at the listen host. Behind a reverse proxy on the same machine (the
// documented set-up: the gateway on 127.0.0.1, the proxy in front) anyone on the internet could pay
// their own invoices. Now dev-pay refuses any request that came through a proxy (a forwarding header,
// or a peer in server.trustedProxies), the account page shows no pay button to such a visitor, and
// `npm start` prints the mode and what it means.
import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { modeSummary } from '../../gateway/dev-guard.ts';
import { loadConfig } from '../../shared/config/index.ts';

t.test('dev-pay refuses a request that came through a proxy', async (t) => {
  const app = await startTestApp(t, { actors: ['wallet'] });
  const { key } = await app.newKey();
  const top = await app.request('POST', '/v1/topups', { key, body: { eur: 1 } });
  t.equal(top.status, 201);
  const pay = (headers: Record<string, string>) =>
    app.request('POST', '/account/dev-pay', { key, headers, body: { topupId: top.json.topup.id } });
  const proxied: Record<string, string>[] = [
    { 'x-forwarded-for': '198.51.100.9' },
    { forwarded: 'for=198.51.100.9' },
    { 'x-real-ip': '198.51.100.9' },
    { via: '1.1 proxy' },
  ];
  for (const headers of proxied) {
    const r = await pay(headers);
    t.equal(r.status, 404, `refused with ${Object.keys(headers)[0]}`);
    t.match(r.json?.error?.message, /came through a proxy/);
  }
  t.equal(
    (await app.request('GET', '/account/config', { headers: { 'x-forwarded-for': '198.51.100.9' } })).json.devPay,
    false,
    'no pay button for a visitor through a proxy',
  );
  t.equal((await app.request('GET', '/account/config')).json.devPay, true, 'the developer on this machine has it');
  const paid = await pay({});
  t.equal(paid.status, 200, 'straight from this machine: paid');
  t.equal(paid.json.balance, 10_000);
});

t.test('a peer in trustedProxies is a proxy even when it sends no header', async (t) => {
  const app = await startTestApp(t, { actors: ['wallet'], config: { server: { trustedProxies: ['loopback'] } } });
  const { key } = await app.newKey();
  const top = await app.request('POST', '/v1/topups', { key, body: { eur: 1 } });
  const r = await app.request('POST', '/account/dev-pay', { key, body: { topupId: top.json.topup.id } });
  t.equal(r.status, 404);
  t.match(r.json?.error?.message, /came through a proxy/);
  t.equal((await app.request('GET', '/account/config')).json.devPay, false);
});

t.test('npm start says the mode and what it means', async (t) => {
  const dev = modeSummary(loadConfig({ env: {}, noDefaultFile: true })).join('\n');
  t.match(dev, /^development with the dev Lightning backend: top-ups are FREE/);
  t.match(dev, /MODE=production/);
  t.match(dev, /README, "Production"/);
  const prod = modeSummary(
    loadConfig({
      env: { MODE: 'production', LIGHTNING_BACKEND: 'lnd', RATE_PROVIDER: 'exchanges' },
      noDefaultFile: true,
      overrides: { wallet: { lightning: { url: 'https://127.0.0.1:1' } } },
    }),
  ).join('\n');
  t.match(prod, /^production \(Lightning backend lnd\): real payments/);
});
