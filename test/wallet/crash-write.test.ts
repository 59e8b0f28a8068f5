// The wallet as its own process, killed with SIGKILL between steps; a restarted instance finishes
// the work: nothing lost, nothing counted twice.
import t from 'tap';
import { startTestNats, tempDir } from '../helpers/nats.ts';
import { walletId } from './_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { ApiError } from '../../shared/errors.ts';
import { spawnWallet, exited, retry } from './_crash.ts';

t.test('killed right after writing a charge, before answering: the retried charge counts once', async (t) => {
  const tn = await startTestNats(t);
  const dataDir = tempDir('payloads-wallet-');
  const w = walletId();
  const first = await spawnWallet(t, tn, dataDir, 'after-ledger-write');
  const done = exited(first);
  // The grant is the first write: the process dies right after it.
  const grant = wallet.grant(tn.nc, w, 1000, 'crash test', 'g-1').catch((e) => e);
  t.equal(await done, 'SIGKILL', 'the wallet process died after the write');
  t.ok((await grant) instanceof ApiError, 'the caller got no answer');
  await spawnWallet(t, tn, dataDir);
  const g = await retry(() => wallet.grant(tn.nc, w, 1000, 'crash test', 'g-1'));
  t.equal(g.balance, 1000, 'the retried grant (same id) is not added again');
  const c = await retry(() => wallet.charge(tn.nc, { walletId: w, jobId: 'j-1', amount: 300 }));
  t.equal(c.balance, 700);
  t.equal((await retry(() => wallet.charge(tn.nc, { walletId: w, jobId: 'j-1', amount: 300 }))).balance, 700);
  t.equal((await wallet.transactions(tn.nc, w)).entries.length, 2);
});
