// The orphan sweep's cursor and its selection follow one order (the entry id). A charge's `at` is
// taken before its write, so under concurrent writers an entry with a lower id can carry a later
// time than the next one: the sweep must not pass over it.
import t from 'tap';
import { jetstream } from '@nats-io/jetstream';
import { startTestNats } from '../helpers/nats.ts';
import { startWallet, walletId, fund } from './_helpers.ts';
import { wallet, type LedgerMessage } from '../../shared/protocol/wallet.ts';
import { subjects } from '../../shared/names.ts';
import { audit } from '../../shared/audit.ts';

const until = async (what: string, f: () => Promise<boolean>, ms = 20000) => {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await f()) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
};

t.test('a charge whose id is lower but whose time is later than the next one is still refunded', async (t) => {
  const tn = await startTestNats(t, { wallet: { orphanChargeGraceSeconds: 1 } });
  const w = walletId();
  await startWallet(t, tn);
  await fund(tn.nc, w, 1000);
  const js = jetstream(tn.nc);
  const now = Date.now();
  // Two gateways' charges as the stream orders them: A first (its clock read 3 s later), then B.
  const a: LedgerMessage = { v: 1, type: 'charge', amount: -300, balanceAfter: 700, at: now + 3000, ref: 'charge:jobA', jobId: 'jobA' };
  const b: LedgerMessage = { v: 1, type: 'charge', amount: -200, balanceAfter: 500, at: now - 10_000, ref: 'charge:jobB', jobId: 'jobB' };
  await js.publish(subjects.ledger(w), JSON.stringify(a));
  await js.publish(subjects.ledger(w), JSON.stringify(b));
  const refunded = await until('both orphan charges refunded', async () => (await wallet.balance(tn.nc, w)).balance === 1000);
  const { entries } = await wallet.transactions(tn.nc, w);
  const back = entries
    .filter((e) => e.type === 'refund')
    .map((e) => [e.jobId, e.amount])
    .sort();
  t.same(
    back,
    [
      ['jobA', 300],
      ['jobB', 200],
    ],
    'both charges without a job are refunded, each once',
  );
  t.ok(refunded, 'the balance is whole again');
  t.same((await audit(tn.nc)).violations, []);
});
