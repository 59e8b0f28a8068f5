import t from 'tap';
import { startTestNats } from '../helpers/nats.ts';
import { startWallet, walletId, fund, putJob } from './_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';

const until = async (what: string, f: () => Promise<boolean>, ms = 20000) => {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await f()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
};

t.test('a charge whose job never came to be is refunded in full once; a charge with its job is kept', async (t) => {
  const tn = await startTestNats(t, { wallet: { orphanChargeGraceSeconds: 1 } });
  await startWallet(t, tn);
  await startWallet(t, tn); // two instances sweep: still refunded once
  const w = walletId();
  await fund(tn.nc, w, 1000);
  await wallet.charge(tn.nc, { walletId: w, jobId: 'lost', amount: 300 });
  await wallet.charge(tn.nc, { walletId: w, jobId: 'kept', amount: 200 });
  await putJob(tn.nc, w, 'kept', [{ key: 'metadata', price: 200 }]);
  await wallet.charge(tn.nc, { walletId: w, jobId: 'half', amount: 100 });
  await wallet.refund(tn.nc, { walletId: w, jobId: 'half', resultKey: 'a', amount: 40 });
  await until('the orphan charges refunded', async () => (await wallet.balance(tn.nc, w)).balance === 800);
  await new Promise((r) => setTimeout(r, 2500)); // more sweeps of both instances
  t.same(await wallet.balance(tn.nc, w), { balance: 800 }, 'lost (300) and the rest of half (60) back, kept charged');
  const { entries } = await wallet.transactions(tn.nc, w);
  const orphanRefunds = entries.filter((e) => e.type === 'refund' && e.resultKey === '_orphan');
  t.same(orphanRefunds.map((e) => [e.jobId, e.amount]).sort(), [
    ['half', 60],
    ['lost', 300],
  ]);
  t.same((await audit(tn.nc)).violations, [], 'audit clean: the orphans are refunded in full');
});
