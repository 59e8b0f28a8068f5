// Each node backend against a local HTTP server that implements that backend's documented endpoints
// (headers, shapes, errors) and gets its invoice paid while the wallet polls or listens.
import t from 'tap';
import http from 'node:http';
import https from 'node:https';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestNats, testLog, testConfig } from '../helpers/nats.ts';
import { startWallet, walletId } from './_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { createBackend, LightningError } from '../../actors/wallet/lightning/index.ts';
import { makeInvoice, readJson, send, listen, selfSignedCert } from './_nodes.ts';
import { startClnNode } from '../helpers/lightning-node.ts';

async function waitPaid(nc: Parameters<typeof wallet.topupGet>[0], w: string, id: string, viaGet = true) {
  for (let i = 0; i < 100; i++) {
    const r = viaGet ? await wallet.topupGet(nc, w, id) : null;
    if (r && r.topup.status !== 'pending') return r;
    await sleep(100);
  }
  return wallet.topupGet(nc, w, id);
}

// ---------------------------------------------------------------- LND REST (TLS, macaroon, subscribe)
function fakeLnd(macaroon: string, tls: { key: string; cert: string }) {
  const invoices = new Map<
    string,
    { state: string; value: number; r_hash: string; payment_request: string; creation_date: string; expiry: string }
  >();
  const subscribers = new Set<http.ServerResponse>();
  let failCreate = false;
  const server = https.createServer(tls, async (req, res) => {
    if (req.headers['grpc-metadata-macaroon'] !== macaroon)
      return send(res, 401, { code: 2, message: 'verification failed: signature mismatch after caveat verification', details: [] });
    const url = new URL(req.url!, 'https://x');
    if (req.method === 'POST' && url.pathname === '/v1/invoices') {
      const body = await readJson(req);
      if (failCreate) return send(res, 500, { code: 2, message: 'unable to create invoice', details: [] });
      const { hash, bolt11 } = makeInvoice(Number(body.value), body.memo, Number(body.expiry));
      const r_hash = Buffer.from(hash, 'hex').toString('base64');
      invoices.set(hash, {
        state: 'OPEN',
        value: Number(body.value),
        r_hash,
        payment_request: bolt11,
        creation_date: String(Math.floor(Date.now() / 1000)),
        expiry: String(body.expiry),
      });
      return send(res, 200, {
        r_hash,
        payment_request: bolt11,
        add_index: String(invoices.size),
        payment_addr: randomBytes(32).toString('base64'),
      });
    }
    const m = /^\/v1\/invoice\/([0-9a-f]{64})$/.exec(url.pathname);
    if (req.method === 'GET' && m) {
      const inv = invoices.get(m[1]!);
      if (!inv) return send(res, 404, { code: 5, message: 'unable to locate invoice', details: [] });
      return send(res, 200, {
        memo: '',
        r_hash: inv.r_hash,
        value: String(inv.value),
        state: inv.state,
        creation_date: inv.creation_date,
        expiry: inv.expiry,
        settled: inv.state === 'SETTLED',
        amt_paid_msat: inv.state === 'SETTLED' ? String(inv.value * 1000) : '0',
      });
    }
    if (req.method === 'GET' && url.pathname === '/v1/invoices/subscribe') {
      res.writeHead(200, { 'content-type': 'application/json' });
      subscribers.add(res);
      req.on('close', () => subscribers.delete(res));
      return;
    }
    send(res, 404, { code: 5, message: 'Not Found' });
  });
  return {
    server,
    invoices,
    setFailCreate: (v: boolean) => {
      failCreate = v;
    },
    settle(hash: string, times = 1) {
      const inv = invoices.get(hash)!;
      inv.state = 'SETTLED';
      for (let i = 0; i < times; i++)
        for (const s of subscribers)
          s.write(JSON.stringify({ result: { ...inv, settled: true, amt_paid_msat: String(inv.value * 1000) } }) + '\n');
    },
    subscribers,
  };
}

t.test('lnd: TLS + macaroon, invoice settled and pushed through the subscription (twice): credited once', async (t) => {
  const tls = selfSignedCert();
  const macaroon = randomBytes(32).toString('hex');
  const lnd = fakeLnd(macaroon, tls);
  const port = await listen(t, lnd.server);
  const tn = await startTestNats(t, {
    wallet: {
      lightning: { backend: 'lnd', url: `https://127.0.0.1:${port}`, macaroonHex: macaroon, tlsCertPath: tls.certPath, pollMs: 60000 },
    },
  });
  await startWallet(t, tn);
  const w = walletId();
  const { topup } = await wallet.topupCreate(tn.nc, w, 3);
  t.match(topup, { status: 'pending', bolt11: /^lnbcrt/, sats: Math.ceil((3 / 90000) * 1e8) });
  const hash = [...lnd.invoices.keys()][0]!;
  t.equal(lnd.invoices.get(hash)!.payment_request, topup.bolt11);
  for (let i = 0; i < 50 && lnd.subscribers.size === 0; i++) await sleep(50);
  t.equal(lnd.subscribers.size, 1, 'the wallet listens on /v1/invoices/subscribe');
  lnd.settle(hash, 2);
  const kvStatus = async () => (await wallet.transactions(tn.nc, w)).entries.length;
  for (let i = 0; i < 100 && (await kvStatus()) === 0; i++) await sleep(50);
  t.same(await wallet.balance(tn.nc, w), { balance: 30_000 }, 'settled by the push (polling is set to one minute)');
  t.equal((await wallet.topupGet(tn.nc, w, topup.id)).topup.status, 'paid');
  await sleep(200);
  t.same(await wallet.balance(tn.nc, w), { balance: 30_000 }, 'two notifications, one credit');
  lnd.setFailCreate(true);
  await t.rejects(wallet.topupCreate(tn.nc, w, 3), { code: 'invoice_failed' }, 'node error: 502 invoice_failed');
  t.same((await audit(tn.nc)).violations, []);
});

t.test('lnd: wrong macaroon or untrusted certificate are errors, not silent', async (t) => {
  const tls = selfSignedCert();
  const lnd = fakeLnd('aa', tls);
  const port = await listen(t, lnd.server);
  const tn = await startTestNats(t);
  const base = { backend: 'lnd', url: `https://127.0.0.1:${port}`, tlsCertPath: tls.certPath };
  const wrongMac = await createBackend({
    nc: tn.nc,
    log: testLog(),
    config: testConfig({ wallet: { lightning: { ...base, macaroonHex: 'bb' } } }),
  });
  await t.rejects(wrongMac.createInvoice(100, 'x', 600), LightningError);
  const noCa = await createBackend({
    nc: tn.nc,
    log: testLog(),
    config: testConfig({ wallet: { lightning: { ...base, macaroonHex: 'aa', tlsCertPath: '' } } }),
  });
  await t.rejects(noCa.createInvoice(100, 'x', 600), /certificate/i);
  const good = await createBackend({
    nc: tn.nc,
    log: testLog(),
    config: testConfig({ wallet: { lightning: { ...base, macaroonHex: 'aa' } } }),
  });
  const inv = await good.createInvoice(100, 'x', 600);
  t.same(await good.lookupInvoice(inv.paymentHash), { state: 'open' });
  lnd.invoices.get(inv.paymentHash)!.state = 'CANCELED';
  t.match(await good.lookupInvoice(inv.paymentHash), { state: 'failed' }, 'canceled before its expiry: failed');
  // LND cancels an invoice itself when it expires: that is an expiry
  lnd.invoices.get(inv.paymentHash)!.creation_date = String(Math.floor(Date.now() / 1000) - 601);
  t.same(await good.lookupInvoice(inv.paymentHash), { state: 'expired' }, 'canceled past its expiry: expired');
  await t.rejects(good.lookupInvoice('00'.repeat(32)), LightningError, 'unknown invoice: 404 from the node');
});

// ---------------------------------------------------------------- LNbits (X-Api-Key, polling)
t.test('lnbits: invoice paid while the wallet polls; a failed payment makes the top-up failed', async (t) => {
  const invoices = new Map<string, { paid: boolean; status: string; amount: number }>();
  let lookups = 0;
  const server = http.createServer(async (req, res) => {
    if (req.headers['x-api-key'] !== 'invoice-key') return send(res, 401, { detail: 'Invalid key' });
    const url = new URL(req.url!, 'http://x');
    if (req.method === 'POST' && url.pathname === '/api/v1/payments') {
      const b = await readJson(req);
      if (b.out !== false || !Number.isInteger(b.amount)) return send(res, 400, { detail: 'bad request' });
      const { hash, bolt11 } = makeInvoice(b.amount, b.memo, b.expiry);
      invoices.set(hash, { paid: false, status: 'pending', amount: b.amount });
      // newer LNbits answer `bolt11`, older `payment_request`: this one answers the older name only
      return send(res, 201, { payment_hash: hash, payment_request: bolt11, checking_id: hash });
    }
    const m = /^\/api\/v1\/payments\/([0-9a-f]{64})$/.exec(url.pathname);
    if (req.method === 'GET' && m) {
      const inv = invoices.get(m[1]!);
      if (!inv) return send(res, 404, { detail: 'Payment does not exist.' });
      lookups++;
      return send(res, 200, {
        paid: inv.paid,
        preimage: inv.paid ? '00'.repeat(32) : null,
        details: { status: inv.status, amount: inv.amount * 1000 },
      });
    }
    send(res, 404, { detail: 'Not Found' });
  });
  const port = await listen(t, server);
  const tn = await startTestNats(t, {
    wallet: { lightning: { backend: 'lnbits', url: `http://127.0.0.1:${port}/`, apiKey: 'invoice-key', pollMs: 100, maxPollMs: 200 } },
  });
  await startWallet(t, tn);
  const w = walletId();
  const a = await wallet.topupCreate(tn.nc, w, 2);
  const b = await wallet.topupCreate(tn.nc, w, 4);
  const [ha, hb] = [...invoices.keys()];
  await sleep(400);
  t.ok(lookups >= 2, 'the wallet polls pending invoices');
  invoices.get(ha!)!.paid = true;
  invoices.get(ha!)!.status = 'success';
  invoices.get(hb!)!.status = 'failed';
  let sa = 'pending';
  let sb = 'pending';
  for (let i = 0; i < 60 && (sa === 'pending' || sb === 'pending'); i++) {
    await sleep(100);
    const { Kvm } = await import('@nats-io/kv');
    const kv = await new Kvm(tn.nc).open('topups');
    sa = (await kv.get(a.topup.id))!.json<{ status: string }>().status;
    sb = (await kv.get(b.topup.id))!.json<{ status: string }>().status;
  }
  t.equal(sa, 'paid', 'paid without a client poll');
  t.equal(sb, 'failed');
  t.same(await wallet.balance(tn.nc, w), { balance: 20_000 });
  t.same((await audit(tn.nc)).violations, []);
});

// ---------------------------------------------------------------- Core Lightning clnrest (Rune, polling)
t.test('cln: invoice, listinvoices; paid while polling; expired stays uncredited; unique labels', async (t) => {
  const node = await startClnNode(t);
  const { invoices, labels } = node;
  const tn = await startTestNats(t, { wallet: { lightning: { ...node.lightning, pollMs: 100, maxPollMs: 200 } } });
  await startWallet(t, tn);
  const w = walletId();
  const a = await wallet.topupCreate(tn.nc, w, 1.5);
  const b = await wallet.topupCreate(tn.nc, w, 1);
  t.equal(labels.size, 2);
  const [ha, hb] = [...invoices.keys()];
  invoices.get(ha!)!.status = 'paid';
  invoices.get(hb!)!.status = 'expired';
  const ra = await waitPaid(tn.nc, w, a.topup.id);
  const rb = await waitPaid(tn.nc, w, b.topup.id);
  t.equal(ra.topup.status, 'paid');
  t.equal(rb.topup.status, 'expired');
  t.equal(ra.balance, 15_000);

  // The node forgets an invoice (database reset): pending while it could still be paid, failed after its expiry.
  node.expiresAt = () => Math.floor(Date.now() / 1000) - 120;
  node.forgetful = true;
  const c = await wallet.topupCreate(tn.nc, w, 2);
  const rc = await waitPaid(tn.nc, w, c.topup.id);
  t.equal(rc.topup.status, 'failed');
  t.equal(rc.balance, 15_000);
  t.same((await audit(tn.nc)).violations, []);
});

t.test('backends refuse to start without their credentials', async (t) => {
  const tn = await startTestNats(t);
  for (const backend of ['lnd', 'lnbits', 'cln']) {
    await t.rejects(
      createBackend({ nc: tn.nc, log: testLog(), config: testConfig({ wallet: { lightning: { backend, url: 'http://127.0.0.1:1' } } }) }),
      LightningError,
      backend,
    );
  }
});
