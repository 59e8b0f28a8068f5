import t from 'tap';
import { startTestNats } from '../helpers/nats.ts';
import { startWallet, walletId, fund, putJob } from './_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { ApiError } from '../../shared/errors.ts';

t.test('charge, refund and balance; retries count once', async (t) => {
  const tn = await startTestNats(t);
  await startWallet(t, tn);
  const w = walletId();
  t.same(await wallet.balance(tn.nc, w), { balance: 0 });
  await fund(tn.nc, w, 1000);
  const c1 = await wallet.charge(tn.nc, { walletId: w, jobId: 'j1', amount: 300 });
  t.equal(c1.balance, 700);
  const again = await wallet.charge(tn.nc, { walletId: w, jobId: 'j1', amount: 300 });
  t.equal(again.balance, 700, 'a retried charge is not charged again');
  t.equal(again.entryId, c1.entryId, 'the retry answers with the original entry');
  const r1 = await wallet.refund(tn.nc, { walletId: w, jobId: 'j1', resultKey: 'pdf', amount: 100 });
  t.equal(r1.balance, 800);
  const r2 = await wallet.refund(tn.nc, { walletId: w, jobId: 'j1', resultKey: 'pdf', amount: 100 });
  t.equal(r2.balance, 800, 'a retried refund is not refunded again');
  await t.rejects(
    wallet.refund(tn.nc, { walletId: w, jobId: 'j1', resultKey: 'x', amount: 201 }),
    { code: 'bad_request' },
    'never more back than charged',
  );
  await t.rejects(
    wallet.refund(tn.nc, { walletId: w, jobId: 'nope', resultKey: 'x', amount: 1 }),
    { code: 'bad_request' },
    'no refund without a charge',
  );
  t.same(await wallet.balance(tn.nc, w), { balance: 800 });
  const before = await audit(tn.nc);
  t.match(before.violations, [/charge .* of job j1 .* no job document/], 'the audit sees a charge nobody accounts for');
  await putJob(tn.nc, w, 'j1', [
    { key: 'pdf', price: 100, refunded: true },
    { key: 'x', price: 200 },
  ]);
  t.same((await audit(tn.nc)).violations, []);
  await putJob(tn.nc, w, 'j1', [
    { key: 'pdf', price: 100 },
    { key: 'x', price: 200, refunded: true },
  ]);
  t.ok((await audit(tn.nc)).violations.length >= 2, 'the audit sees a job that disagrees with the ledger');
});

t.test('insufficient_funds carries needed, balance and a top-up suggestion; nothing is written', async (t) => {
  const tn = await startTestNats(t);
  await startWallet(t, tn);
  const w = walletId();
  await fund(tn.nc, w, 120);
  const err = await wallet.charge(tn.nc, { walletId: w, jobId: 'big', amount: 5000 }).catch((e) => e);
  t.ok(err instanceof ApiError);
  t.equal(err.code, 'insufficient_funds');
  t.equal(err.status, 402);
  t.equal(err.details.needed, 5000);
  t.equal(err.details.balance, 120);
  t.same(err.details.topup, { eur: 0.49, url: '/v1/topups' }, 'smallest top-up in cents that covers 4880 Payloads');
  const tx = await wallet.transactions(tn.nc, w);
  t.equal(tx.entries.length, 1, 'only the grant');
  t.same((await audit(tn.nc)).violations, []);
});

t.test('bad input is refused with bad_request', async (t) => {
  const tn = await startTestNats(t);
  await startWallet(t, tn);
  await t.rejects(wallet.charge(tn.nc, { walletId: 'a.b', jobId: 'j', amount: 1 }), { code: 'bad_request' });
  await t.rejects(wallet.charge(tn.nc, { walletId: 'w_ok', jobId: 'j', amount: 1.5 }), { code: 'bad_request' });
  await t.rejects(wallet.charge(tn.nc, { walletId: 'w_ok', jobId: 'j', amount: -1 }), { code: 'bad_request' });
  await t.rejects(wallet.grant(tn.nc, 'w_ok', -5, 'would go negative'), { code: 'bad_request' });
});
