import t from 'tap';
import { decode } from 'light-bolt11-decoder';
import { Kvm } from '@nats-io/kv';
import { jetstreamManager } from '@nats-io/jetstream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/nats-core';
import { startTestNats } from '../helpers/nats.ts';
import { startWallet, walletId } from './_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { devNodeKey } from '../../actors/wallet/lightning/dev.ts';
import { recoverPayee } from '../../actors/wallet/lightning/bolt11.ts';
import { BUCKETS, STREAMS, subjects } from '../../shared/names.ts';

const section = (inv: string, name: string) => decode(inv).sections.find((s) => s.name === name) as { value?: unknown } | undefined;

/** The dev node's record of an invoice, as the node would change it. */
async function devInvoice(nc: NatsConnection, bolt11: string) {
  const kv = await new Kvm(nc).open(BUCKETS.devInvoices);
  const hash = section(bolt11, 'payment_hash')!.value as string;
  return { kv, hash, inv: (await kv.get(hash))!.json<Record<string, unknown>>() };
}

t.test('a top-up makes a real, signed BOLT11 invoice that an independent decoder reads', async (t) => {
  const tn = await startTestNats(t, { wallet: { rate: { fixedEurPerBtc: 50000 } } });
  await startWallet(t, tn);
  const w = walletId();
  const { topup, balance } = await wallet.topupCreate(tn.nc, w, 12.34);
  t.equal(balance, 0);
  t.match(topup, { status: 'pending', eur: 12.34, eurCents: 1234, payloads: 123400, bonusPayloads: 0, sats: 24680 });
  t.type(topup.id, 'string');
  t.ok(topup.expiresAt > Date.now() + 800_000 && topup.expiresAt <= Date.now() + 900_000, 'expires with the configured 900 s');
  const inv = topup.bolt11!;
  t.match(inv, /^lnbcrt\d+[munp]1/, 'regtest invoice of the dev node');
  t.equal(section(inv, 'amount')!.value, String(24680 * 1000), 'amount in msat');
  t.match(section(inv, 'description')!.value, /12\.34 EUR/);
  t.equal(decode(inv).expiry, 900);
  t.match(section(inv, 'payment_hash')!.value, /^[0-9a-f]{64}$/);
  t.equal(recoverPayee(inv), devNodeKey(tn.config.dataDir).pubkey, 'signed by the persisted dev node key');
  const got = await wallet.topupGet(tn.nc, w, topup.id);
  t.same(got.topup, topup);
  await t.rejects(wallet.topupGet(tn.nc, walletId(), topup.id), { code: 'not_found' }, 'another wallet sees 404');
  await t.rejects(wallet.topupGet(tn.nc, w, 't_nope'), { code: 'not_found' });
});

t.test('amount rules: 0.25..100.00, two decimals, else bad_request; bonus tiers', async (t) => {
  const tn = await startTestNats(t);
  await startWallet(t, tn);
  const w = walletId();
  for (const eur of [0.24, 100.01, 1.001, -1, 0]) await t.rejects(wallet.topupCreate(tn.nc, w, eur), { code: 'bad_request' }, `eur ${eur}`);
  await t.rejects(wallet.topupCreate(tn.nc, w, '5' as unknown as number), { code: 'bad_request' });
  t.match((await wallet.topupCreate(tn.nc, w, 0.25)).topup, { eurCents: 25, payloads: 2500, bonusPayloads: 0 });
  t.match(
    (await wallet.topupCreate(tn.nc, w, 100)).topup,
    { eurCents: 10000, payloads: 1_100_000, bonusPayloads: 100_000 },
    '10 % from 50 EUR',
  );
  t.match((await wallet.topupCreate(tn.nc, w, 20)).topup, { payloads: 210_000, bonusPayloads: 10_000 }, '5 % from 20 EUR');
  t.match((await wallet.topupCreate(tn.nc, w, 19.99)).topup, { bonusPayloads: 0 });
});

t.test('dev pay settles once; the balance includes the bonus; events are published', async (t) => {
  const tn = await startTestNats(t);
  await startWallet(t, tn);
  const w = walletId();
  const { topup } = await wallet.topupCreate(tn.nc, w, 50);
  const paid = await wallet.topupPay(tn.nc, topup.id);
  t.equal(paid.alreadyPaid, false);
  t.equal(paid.topup.status, 'paid');
  t.equal(paid.topup.bolt11, null, 'no invoice once paid');
  t.equal(paid.balance, 550_000);
  const again = await wallet.topupPay(tn.nc, topup.id);
  t.equal(again.alreadyPaid, true);
  t.equal(again.balance, 550_000, 'paying twice credits once');
  const got = await wallet.topupGet(tn.nc, w, topup.id);
  t.equal(got.topup.status, 'paid');
  t.equal(got.balance, 550_000);
  const tx = await wallet.transactions(tn.nc, w);
  t.match(tx.entries, [{ type: 'topup', amount: 550_000, balanceAfter: 550_000, topupId: topup.id, bonus: 50_000 }]);
  const jsm = await jetstreamManager(tn.nc);
  const last = await jsm.streams.getMessage(STREAMS.events, { last_by_subj: subjects.evtTopup(topup.id) });
  t.match(last!.json(), { id: topup.id, status: 'paid' }, 'state change on evt.topup.<id>');
  t.same((await audit(tn.nc)).violations, []);
});

t.test('the backend reports the payment many times, to two instances: credited exactly once', async (t) => {
  const tn = await startTestNats(t);
  await startWallet(t, tn);
  await startWallet(t, tn);
  const w = walletId();
  const { topup } = await wallet.topupCreate(tn.nc, w, 5);
  // The dev node's invoice record, as the node would change it: each put is a settlement notification.
  const { kv, hash, inv } = await devInvoice(tn.nc, topup.bolt11!);
  for (let i = 0; i < 5; i++) await kv.put(hash, JSON.stringify({ ...inv, state: 'paid', paidAt: Date.now() }));
  let status = 'pending';
  for (let i = 0; i < 100 && status !== 'paid'; i++) {
    await sleep(50);
    const kvTop = await new Kvm(tn.nc).open(BUCKETS.topups);
    status = (await kvTop.get(topup.id))!.json<{ status: string }>().status;
  }
  t.equal(status, 'paid', 'settled by the pushed notification, without a client poll');
  await sleep(300);
  t.same(await wallet.balance(tn.nc, w), { balance: 50_000 });
  t.equal((await wallet.transactions(tn.nc, w)).entries.length, 1);
  t.same((await audit(tn.nc)).violations, []);
});

t.test('an invoice past its expiry makes the top-up expired; it cannot be paid any more', async (t) => {
  const tn = await startTestNats(t);
  await startWallet(t, tn);
  const w = walletId();
  const { topup } = await wallet.topupCreate(tn.nc, w, 1);
  const { kv, hash, inv } = await devInvoice(tn.nc, topup.bolt11!);
  await kv.put(hash, JSON.stringify({ ...inv, expiresAt: Date.now() - 1 }));
  const got = await wallet.topupGet(tn.nc, w, topup.id);
  t.equal(got.topup.status, 'expired');
  t.equal(got.topup.bolt11, null);
  await t.rejects(wallet.topupPay(tn.nc, topup.id), { code: 'bad_request' });
  t.same(await wallet.balance(tn.nc, w), { balance: 0 });
  t.same((await audit(tn.nc)).violations, []);
});
