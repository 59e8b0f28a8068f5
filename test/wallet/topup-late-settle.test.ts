// A top-up becomes final only when the Lightning node says so: an invoice the node still reports
// unpaid after its expiry stays pending, and a payment that settles late is credited (issue 20).
import t from 'tap';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kvm } from '@nats-io/kv';
import { startTestNats } from '../helpers/nats.ts';
import { startWallet, walletId } from './_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { makeInvoice, readJson, send, listen } from './_nodes.ts';
import { audit } from '../../shared/audit.ts';

t.test('an invoice the node reports unpaid past its expiry stays pending; its late settlement is credited', async (t) => {
  // A Core Lightning REST node whose invoices claim an expiry two minutes ago (a slow node, clock skew).
  const invoices = new Map<string, { label: string; status: string; msat: number; expires_at: number }>();
  let lookups = 0;
  const server = http.createServer(async (req, res) => {
    const b = await readJson(req);
    if (req.method === 'POST' && req.url === '/v1/invoice') {
      const { hash, bolt11 } = makeInvoice(b.amount_msat / 1000, b.description, b.expiry);
      const expires_at = Math.floor(Date.now() / 1000) - 120;
      invoices.set(hash, { label: b.label, status: 'unpaid', msat: b.amount_msat, expires_at });
      return send(res, 201, { payment_hash: hash, bolt11, expires_at, payment_secret: randomBytes(32).toString('hex'), created_index: invoices.size });
    }
    if (req.method === 'POST' && req.url === '/v1/listinvoices') {
      lookups++;
      const inv = invoices.get(b.payment_hash);
      return send(res, 201, { invoices: inv ? [{ label: inv.label, payment_hash: b.payment_hash, status: inv.status, amount_msat: inv.msat, expires_at: inv.expires_at, ...(inv.status === 'paid' ? { amount_received_msat: inv.msat, paid_at: Math.floor(Date.now() / 1000) } : {}) }] : [] });
    }
    send(res, 404, { code: -32601, message: 'Unknown command' });
  });
  const port = await listen(t, server);

  const tn = await startTestNats(t, { wallet: { lightning: { backend: 'cln', url: `http://127.0.0.1:${port}`, rune: 'rune-abc', pollMs: 100, maxPollMs: 200 } } });
  await startWallet(t, tn);
  const w = walletId();
  const { topup } = await wallet.topupCreate(tn.nc, w, 1);
  t.ok(topup.expiresAt < Date.now() - 60_000, 'the invoice is past its expiry and its grace');
  const kv = await new Kvm(tn.nc).open('topups');
  const status = async () => (await kv.get(topup.id))!.json<{ status: string }>().status;

  const seen = lookups;
  for (let i = 0; i < 50 && lookups < seen + 5; i++) await sleep(100); // several polls, each finding the invoice unpaid
  t.equal(await status(), 'pending', 'still pending while the node says unpaid');
  t.equal((await wallet.topupGet(tn.nc, w, topup.id)).topup.status, 'pending', 'GET answers pending too');

  invoices.get([...invoices.keys()][0]!)!.status = 'paid';
  let st = 'pending';
  for (let i = 0; i < 100 && st === 'pending'; i++) {
    await sleep(100);
    st = await status();
  }
  t.equal(st, 'paid', 'the late settlement is seen');
  t.same(await wallet.balance(tn.nc, w), { balance: 10_000 }, 'and credited');
  t.same((await audit(tn.nc)).violations, []);
});
