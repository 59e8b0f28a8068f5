// A top-up becomes final only when the Lightning node says so: an invoice the node still reports
// unpaid after its expiry stays pending, and a payment that settles late is credited (issue 20).
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kvm } from '@nats-io/kv';
import { startTestNats } from '../helpers/nats.ts';
import { startWallet, walletId } from './_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { startClnNode } from '../helpers/lightning-node.ts';
import { audit } from '../../shared/audit.ts';

t.test('an invoice the node reports unpaid past its expiry stays pending; its late settlement is credited', async (t) => {
  // A Core Lightning REST node whose invoices claim an expiry two minutes ago (a slow node, clock skew).
  const node = await startClnNode(t);
  node.expiresAt = () => Math.floor(Date.now() / 1000) - 120;
  const { invoices } = node;
  const tn = await startTestNats(t, { wallet: { lightning: { ...node.lightning, pollMs: 100, maxPollMs: 200 } } });
  await startWallet(t, tn);
  const w = walletId();
  const { topup } = await wallet.topupCreate(tn.nc, w, 1);
  t.ok(topup.expiresAt < Date.now() - 60_000, 'the invoice is past its expiry and its grace');
  const kv = await new Kvm(tn.nc).open('topups');
  const status = async () => (await kv.get(topup.id))!.json<{ status: string }>().status;

  const seen = node.lookups();
  for (let i = 0; i < 50 && node.lookups() < seen + 5; i++) await sleep(100); // several polls, each finding the invoice unpaid
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
