import t from 'tap';
import { startTestNats, type TestNats } from '../helpers/nats.ts';
import { startTestCluster } from '../helpers/cluster.ts';
import { startWallet, walletId, fund, putJob } from './_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { ApiError } from '../../shared/errors.ts';

async function race(nc: Parameters<typeof wallet.charge>[0][], w: string, n: number, price: number, prefix = 'job') {
  const outcomes = await Promise.allSettled(
    Array.from({ length: n }, (_, i) => wallet.charge(nc[i % nc.length]!, { walletId: w, jobId: `${prefix}-${i}`, amount: price })),
  );
  // The job documents the gateway would write for the accepted ones, so the audit can match them.
  for (let i = 0; i < n; i++) if (outcomes[i]!.status === 'fulfilled') await putJob(nc[0]!, w, `${prefix}-${i}`, [{ key: 'r', price }]);
  const ok = outcomes.filter((o) => o.status === 'fulfilled').length;
  const refused = outcomes.filter(
    (o) => o.status === 'rejected' && o.reason instanceof ApiError && o.reason.code === 'insufficient_funds',
  ).length;
  return { ok, refused, other: n - ok - refused };
}

async function checkWallet(t: { ok: Function; equal: Function; same: Function }, nc: Parameters<typeof wallet.charge>[0], w: string) {
  const { balance } = await wallet.balance(nc, w);
  t.ok(balance >= 0, 'balance never negative');
  const all = [];
  let before: number | undefined;
  for (;;) {
    const page = await wallet.transactions(nc, w, before);
    all.push(...page.entries);
    if (page.next === null) break;
    before = page.next;
  }
  t.equal(
    all.reduce((s, e) => s + e.amount, 0),
    balance,
    'balance = sum of entries',
  );
  t.same((await audit(nc)).violations, [], 'audit clean');
  return { balance, entries: all.length };
}

t.test('50 parallel charges against a balance for 20: exactly 20 succeed (one instance)', async (t) => {
  const tn = await startTestNats(t);
  await startWallet(t, tn);
  const w = walletId();
  await fund(tn.nc, w, 20 * 70);
  const clients = [tn.nc, await tn.connect('c2'), await tn.connect('c3')];
  const r = await race(clients, w, 50, 70);
  t.same(r, { ok: 20, refused: 30, other: 0 });
  const c = await checkWallet(t, tn.nc, w);
  t.equal(c.balance, 0);
  t.equal(c.entries, 21);
});

t.test('50 parallel charges against a balance for 20: exactly 20 succeed (two instances)', async (t) => {
  const tn = await startTestNats(t);
  await startWallet(t, tn);
  await startWallet(t, tn);
  const w = walletId();
  await fund(tn.nc, w, 20 * 70 + 33);
  const clients = [tn.nc, await tn.connect('c2'), await tn.connect('c3'), await tn.connect('c4')];
  const r = await race(clients, w, 50, 70);
  t.same(r, { ok: 20, refused: 30, other: 0 });
  const c = await checkWallet(t, tn.nc, w);
  t.equal(c.balance, 33);
  t.equal(c.entries, 21);
});

t.test('retries of the same charges from many clients, two instances: each job charged once', async (t) => {
  const tn = await startTestNats(t);
  await startWallet(t, tn);
  await startWallet(t, tn);
  const w = walletId();
  await fund(tn.nc, w, 1000);
  const clients = [tn.nc, await tn.connect('c2')];
  const calls = [];
  for (let i = 0; i < 40; i++) calls.push(wallet.charge(clients[i % 2]!, { walletId: w, jobId: `job-${i % 10}`, amount: 10 }));
  await Promise.all(calls);
  t.same(await wallet.balance(tn.nc, w), { balance: 900 });
  for (let i = 0; i < 10; i++) await putJob(tn.nc, w, `job-${i}`, [{ key: 'r', price: 10 }]);
  const c = await checkWallet(t, tn.nc, w);
  t.equal(c.entries, 11);
});

t.test('3-node cluster, two instances on different nodes: 50 parallel charges, balance for 20 → exactly 20', async (t) => {
  const tc = await startTestCluster(t);
  const asNats = { config: tc.config } as TestNats;
  await startWallet(t, asNats, { nc: await tc.connect(0, 'wallet-1'), config: tc.config });
  await startWallet(t, asNats, { nc: await tc.connect(1, 'wallet-2'), config: tc.config });
  const clients = [await tc.connect(0, 'c1'), await tc.connect(1, 'c2'), await tc.connect(2, 'c3')];
  for (let round = 0; round < 3; round++) {
    const w = walletId();
    await fund(clients[0]!, w, 20 * 70 + 33);
    const r = await race(clients, w, 50, 70, `job-r${round}`);
    t.same(r, { ok: 20, refused: 30, other: 0 }, `round ${round}: exactly 20 charges accepted`);
    const c = await checkWallet(t, clients[0]!, w);
    t.equal(c.balance, 33, `round ${round}: the balance is what is left of the grant`);
    t.equal(c.entries, 21, `round ${round}: one entry per accepted charge`);
  }
});
