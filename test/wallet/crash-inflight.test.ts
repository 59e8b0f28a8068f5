// The wallet as its own process, killed with SIGKILL between steps; a restarted instance finishes
// the work: nothing lost, nothing counted twice.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestNats, tempDir } from '../helpers/nats.ts';
import { walletId, fund } from './_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { spawnWallet, exited, retry } from './_crash.ts';

t.test('charges in flight when the process dies: every retried job is charged exactly once', async (t) => {
  const tn = await startTestNats(t);
  const dataDir = tempDir('payloads-wallet-');
  const w = walletId();
  const a = await spawnWallet(t, tn, dataDir);
  await fund(tn.nc, w, 10_000);
  const jobs = Array.from({ length: 40 }, (_, i) => `job-${i}`);
  const calls = jobs.map((jobId, i) => sleep(i * 5).then(() => retry(() => wallet.charge(tn.nc, { walletId: w, jobId, amount: 100 }))));
  await sleep(60);
  a.kill('SIGKILL');
  await exited(a);
  await spawnWallet(t, tn, dataDir);
  await Promise.all(calls);
  t.same(await wallet.balance(tn.nc, w), { balance: 10_000 - 40 * 100 });
  const entries = (await wallet.transactions(tn.nc, w)).entries;
  t.equal(entries.filter((e) => e.type === 'charge').length, 40, 'one charge per job');
  const r = await audit(tn.nc);
  t.same(
    r.violations.filter((v) => !/no job document/.test(v)),
    [],
  );
});
