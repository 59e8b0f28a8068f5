// The ledger projection's watchdog (actors/wallet/ledger.ts): when a write waits for the projection
// and its consumer delivers nothing (a consumer that stopped delivering after a partition, issue 45),
// the consumer is started again from the last applied sequence, and the write goes through. Without
// it the write waits out its 10 s and fails, and so does every later one.
import t from 'tap';
import { startTestNats } from '../helpers/nats.ts';
import { ledgerOn, walletId } from './_helpers.ts';
import { grant } from '../../actors/wallet/money.ts';
import { readLedger } from '../../shared/audit.ts';

t.test('a projection consumer that delivers nothing is started again when a write waits for it', async (t) => {
  const tn = await startTestNats(t);
  const a = await ledgerOn(t, tn.nc, 'a');
  const b = await ledgerOn(t, await tn.connect('b'), 'b');
  const w = walletId();
  t.equal((await grant(a, w, 100, 'start', 'g-0')).balance, 100, 'a writes first');
  // a's consumer stops delivering (as nats.js's ordered consumer did after a flapping link healed)
  (a as unknown as { messages: { stop(): void } }).messages.stop();
  // another instance writes to the wallet: a's guess is stale, so a's next write reads the head
  // and waits for its projection to reach it
  t.equal((await grant(b, w, 50, 'more', 'g-1')).balance, 150, 'b writes on the head');
  t.equal((await grant(a, w, 25, 'again', 'g-2')).balance, 175, "a's write goes through on the new head");
  t.equal(a.restarts, 1, 'its consumer was started again once');
  t.equal((await grant(a, w, 5, 'once more', 'g-3')).balance, 180, 'and writes on');
  const entries = (await readLedger(tn.nc)).filter((e) => e.walletId === w);
  t.same(
    entries.map((e) => e.balanceAfter),
    [100, 150, 175, 180],
    'each write once, in order',
  );
});
