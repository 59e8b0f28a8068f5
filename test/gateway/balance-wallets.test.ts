// The balance read costs the same at one wallet and at many (issue 26): where direct gets are
// strict, a read asks for the last entry of the wallet's own subject (one subject's index entry),
// never for the last entry of `ledger.>`, which nats-server answers by walking every wallet's
// subject. Counted: every direct get the gateway sends and the subject it asks for.
import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { STREAMS, subjects } from '../../shared/names.ts';
import { readBalance } from '../../gateway/balances.ts';
import { writeLedgerHistory, historyWallet, GRANT } from '../../bench/lib/ledger-history.ts';

t.test("with 20,000 wallets, a balance read asks for its own wallet's last entry only, and is as of now", async (t) => {
  const app = await startTestApp(t, { actors: ['wallet'], config: { nats: { syncInterval: '2m' } } });
  await writeLedgerHistory(app.nc, { entries: 20_000, wallets: 20_000, prefix: 'bw' });
  const { key, walletId } = await app.newKey();
  const balance = async () => (await app.request('GET', '/v1/balance', { key })).json.balance as number;
  await wallet.grant(app.nc, walletId, 10_000, 'test funds');
  await balance(); // the first read may wait for the gateway's consumer to start

  const asked: string[] = [];
  const spy = app.nc.subscribe(`$JS.API.DIRECT.GET.${STREAMS.ledger}`, {
    callback: (_e, m) => {
      asked.push(m.json<{ last_by_subj?: string }>().last_by_subj ?? '?');
    },
  });
  await app.nc.flush();
  let stale = 0;
  for (let i = 1; i <= 10; i++) {
    await wallet.charge(app.nc, { walletId, jobId: `j${i}`, amount: 100 });
    if ((await balance()) !== 10_000 - 100 * i) stale++;
  }
  await app.nc.flush();
  spy.unsubscribe();
  t.equal(stale, 0, 'each answer includes the charge made just before it');
  t.equal(asked.length, 10, 'one direct get per read');
  t.same([...new Set(asked)], [subjects.ledger(walletId)], "each asks for the wallet's own subject, never ledger.>");

  // a wallet of the history, never read before, is read the same way (another connection's reader)
  t.equal(await readBalance(app.nc, historyWallet('bw', 12_345)), GRANT);
});
