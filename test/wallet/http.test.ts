import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';

t.test('wallet over HTTP: balance, top-up, dev pay, transactions, 404 for another key', async (t) => {
  const app = await startTestApp(t, { actors: ['wallet'] });
  const { key, walletId } = await app.newKey();
  const other = await app.newKey();

  t.equal((await app.request('GET', '/v1/balance')).status, 401);
  const b0 = await app.request('GET', '/v1/balance', { key });
  t.equal(b0.status, 200);
  t.same(b0.json, { balance: 0, unit: 'payloads', eur: 0 });

  for (const body of [{ eur: 0.2 }, { eur: 100.5 }, { eur: 1.234 }, { eur: '5' }, {}, { eur: 5, extra: 1 }]) {
    const r = await app.request('POST', '/v1/topups', { key, body });
    t.equal(r.status, 400, `400 for ${JSON.stringify(body)}`);
    t.equal(r.json?.error?.code, 'bad_request');
  }
  const created = await app.request('POST', '/v1/topups', { key, body: { eur: 25 } });
  t.equal(created.status, 201);
  const topup = created.json.topup;
  t.match(created.json, {
    balance: 0,
    topup: { status: 'pending', eur: 25, eurCents: 2500, payloads: 262_500, bonusPayloads: 12_500, bolt11: /^lnbcrt/, sats: Number },
  });
  t.type(topup.expiresAt, 'number');

  t.equal((await app.request('GET', `/v1/topups/${topup.id}`, { key: other.key })).status, 404, 'another key: 404');
  t.equal((await app.request('GET', '/v1/topups/t_missing', { key })).json.error.code, 'not_found');

  await wallet.topupPay(app.nc, topup.id);
  const got = await app.request('GET', `/v1/topups/${topup.id}`, { key });
  t.equal(got.status, 200);
  t.match(got.json, { balance: 262_500, topup: { id: topup.id, status: 'paid', bolt11: null } });
  t.same((await app.request('GET', '/v1/balance', { key })).json, { balance: 262_500, unit: 'payloads', eur: 26.25 });

  // 60 charges: two pages of transactions
  for (let i = 0; i < 60; i++) await wallet.charge(app.nc, { walletId, jobId: `j${i}`, amount: 10 });
  for (let i = 0; i < 60; i++) await wallet.refund(app.nc, { walletId, jobId: `j${i}`, resultKey: 'r', amount: 10 });
  const p1 = await app.request('GET', '/v1/transactions', { key });
  t.equal(p1.status, 200);
  t.equal(p1.json.entries.length, 50);
  t.equal(p1.json.balance, 262_500);
  const ids = p1.json.entries.map((e: { id: number }) => e.id);
  t.same(
    ids,
    [...ids].sort((a: number, b: number) => b - a),
    'newest first',
  );
  const p2 = await app.request('GET', `/v1/transactions?before=${p1.json.next}`, { key });
  const p3 = await app.request('GET', `/v1/transactions?before=${p2.json.next}`, { key });
  t.equal(p2.json.entries.length, 50);
  t.equal(p3.json.entries.length, 21);
  t.equal(p3.json.next, null);
  const all = [...p1.json.entries, ...p2.json.entries, ...p3.json.entries];
  t.equal(new Set(all.map((e) => e.id)).size, 121, 'no entry twice across pages');
  t.equal(
    all.reduce((s, e) => s + e.amount, 0),
    262_500,
    'sum of entries = balance',
  );
  t.match(all.at(-1), { type: 'topup', topupId: topup.id, bonus: 12_500 });
  t.equal((await app.request('GET', '/v1/transactions?before=abc', { key })).status, 400);
  t.same((await app.request('GET', '/v1/transactions', { key: other.key })).json.entries, [], 'another wallet sees nothing');
  // Charges without job documents, refunded in full: the audit accepts them.
  t.same((await audit(app.nc)).violations, []);
});

t.test('invoice backend down: 502 invoice_failed, nothing created', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet'],
    config: { wallet: { lightning: { backend: 'lnbits', url: 'http://127.0.0.1:9', apiKey: 'x', timeoutMs: 500 } } },
  });
  const { key } = await app.newKey();
  const r = await app.request('POST', '/v1/topups', { key, body: { eur: 5 } });
  t.equal(r.status, 502);
  t.equal(r.json.error.code, 'invoice_failed');
});
