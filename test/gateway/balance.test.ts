// Balances the gateway reads from the ledger (gateway/balances.ts): GET /v1/balance and quotes
// answer without a wallet request, and still see every ledger write acknowledged before the request:
// a charge or refund made through another connection (another gateway, the supervisor), a grant.
import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { advertise } from '../../shared/catalogue.ts';
import { subjects } from '../../shared/names.ts';

t.test('GET /v1/balance sees every ledger write acknowledged before it, without asking the wallet', async (t) => {
  const app = await startTestApp(t, { actors: ['wallet'] });
  const { key, walletId } = await app.newKey();
  const balance = async () => (await app.request('GET', '/v1/balance', { key })).json.balance as number;
  // money that was there before the gateway read any balance: read from the stream on first use
  await wallet.grant(app.nc, walletId, 10_000, 'test funds');
  t.equal(await balance(), 10_000, "an entry older than the gateway's ledger consumer");
  let walletAsked = 0;
  const spy = app.nc.subscribe(subjects.wallet.balance, {
    callback: () => {
      walletAsked++;
    },
  });
  await app.nc.flush();
  let expected = 10_000;
  let stale = 0;
  for (let i = 0; i < 25; i++) {
    await wallet.charge(app.nc, { walletId, jobId: `j${i}`, amount: 100 });
    expected -= 100;
    if ((await balance()) !== expected) stale++;
    if (i % 2) {
      await wallet.refund(app.nc, { walletId, jobId: `j${i}`, resultKey: 'r', amount: 100 });
      expected += 100;
      if ((await balance()) !== expected) stale++;
    }
  }
  t.equal(stale, 0, 'every answer includes the write made just before it (fails if reads lag the ledger)');
  const other = await app.newKey();
  t.equal((await app.request('GET', '/v1/balance', { key: other.key })).json.balance, 0, 'a wallet with no entry has 0');
  await app.nc.flush();
  spy.unsubscribe();
  t.equal(walletAsked, 0, 'no wallet.balance request (fails when each GET asks the wallet)');
});

t.test('a quote shows the balance as of now without a wallet request', async (t) => {
  const app = await startTestApp(t, { actors: ['wallet'] });
  const ad = await advertise(app.nc, 'websitepro', 'conv-1', () => ({ outputs: ['metadata'] }));
  t.teardown(() => ad.stop());
  const { key, walletId } = await app.newKey();
  let walletAsked = 0;
  const spy = app.nc.subscribe(subjects.wallet.balance, {
    callback: () => {
      walletAsked++;
    },
  });
  const body = { url: 'https://example.com/a', outputs: ['metadata'] };
  const q0 = await app.request('POST', '/v1/websitepro/quote', { key, body });
  t.equal(q0.status, 200);
  t.match(q0.json, { balance: 0, sufficient: false });
  await wallet.grant(app.nc, walletId, 50_000, 'test funds');
  const q1 = await app.request('POST', '/v1/websitepro/quote', { key, body });
  t.match(q1.json, { balance: 50_000, sufficient: true }, 'the grant just made is in the quote');
  await app.nc.flush();
  spy.unsubscribe();
  t.equal(walletAsked, 0, 'no wallet.balance request');
});

t.test("the gateway's ledger consumer lost on the server: balances stay right, and it recovers", async (t) => {
  const app = await startTestApp(t, { actors: ['wallet'] });
  const { key, walletId } = await app.newKey();
  const balance = async () => (await app.request('GET', '/v1/balance', { key })).json.balance as number;
  await wallet.grant(app.nc, walletId, 1000, 'test funds');
  t.equal(await balance(), 1000);
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const jsm = await jetstreamManager(app.nc);
  const consumers = await jsm.consumers.list('LEDGER').next();
  // the gateway's starts after the stream's end (the wallet's projection's is named for it)
  const ours = consumers.filter((c) => c.config.deliver_policy === 'by_start_sequence' && !c.name.startsWith('wallet_'));
  t.equal(ours.length, 1, 'the gateway follows the ledger with one consumer');
  await jsm.consumers.delete('LEDGER', ours[0]!.name);
  await wallet.grant(app.nc, walletId, 500, 'more');
  t.equal(await balance(), 1500, 'the write after the loss is in the next answer');
  let recovered = false;
  let expected = 1500;
  for (let i = 0; i < 40 && !recovered; i++) {
    await new Promise((r) => setTimeout(r, 250));
    await wallet.grant(app.nc, walletId, 1, `step ${i}`);
    expected += 1;
    let asked = 0;
    const spy = app.nc.subscribe(subjects.wallet.balance, {
      callback: () => {
        asked++;
      },
    });
    await app.nc.flush();
    t.equal(await balance(), expected, `balance right while recovering (${i})`);
    await app.nc.flush();
    spy.unsubscribe();
    recovered = asked === 0;
  }
  t.ok(recovered, 'reads come from the ledger consumer again, without asking the wallet');
});
