// The ledger's head guess (issue 17): a wallet instance that made a wallet's last write decides the
// next one on the head it wrote, without reading it from the stream; the compare-and-set write is
// the check, so a stale guess (another writer, a deleted entry) costs a re-read, never money.
import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { startTestNats, type TestNats } from '../helpers/nats.ts';
import { ledgerOn, startWallet, walletId, fund } from './_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { STREAMS, subjects } from '../../shared/names.ts';
import { ApiError } from '../../shared/errors.ts';
import { readLedger } from '../../shared/audit.ts';
import { charge, grant } from '../../actors/wallet/money.ts';

type Tap = { teardown(fn: () => unknown): void };

/** Counts the head reads (stream message gets, plain or direct, of LEDGER) anybody makes. */
async function countHeadReads(t: Tap, tn: TestNats) {
  const spy = await tn.connect('spy');
  let n = 0;
  const sub = spy.subscribe('$JS.API.>', {
    callback: (_e, m) => {
      if (m.subject === `$JS.API.STREAM.MSG.GET.${STREAMS.ledger}` || m.subject.startsWith(`$JS.API.DIRECT.GET.${STREAMS.ledger}`)) n++;
    },
  });
  t.teardown(() => sub.unsubscribe());
  await spy.flush();
  return {
    /** The count once every request sent so far has reached the spy. */
    async count() {
      await spy.flush();
      return n;
    },
  };
}

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e) => (e instanceof ApiError ? e.code : String(e)),
  );

t.test('consecutive charges on one wallet: the head is read from the stream once, not per charge', async (t) => {
  const tn = await startTestNats(t);
  await startWallet(t, tn);
  const reads = await countHeadReads(t, tn);
  const w = walletId();
  await fund(tn.nc, w, 1000);
  const afterFund = await reads.count();
  t.ok(afterFund <= 1, `the first write of a wallet may read its head (${afterFund} reads)`);
  let balance = 1000;
  for (let i = 0; i < 20; i++) {
    const r = await wallet.charge(tn.nc, { walletId: w, jobId: `j-${i}`, amount: 10 });
    balance -= 10;
    t.equal(r.balance, balance);
  }
  const during = (await reads.count()) - afterFund;
  t.equal(during, 0, `20 charges after the first write: no head read (${during} reads)`);
  // a refusal is never answered from the guess: it reads the head
  t.equal(await refusal(wallet.charge(tn.nc, { walletId: w, jobId: 'too-big', amount: 5000 })), 'insufficient_funds');
  const dup = await wallet.charge(tn.nc, { walletId: w, jobId: 'j-3', amount: 10 });
  t.same([dup.duplicate, dup.balance], [true, 800], 'a retried charge is answered with the current balance, charged once');
  t.same(await wallet.balance(tn.nc, w), { balance: 800 });
});

t.test('two writers alternating on one wallet: each stale guess is refused and re-read; balances exact, refs once', async (t) => {
  const tn = await startTestNats(t);
  const a = await ledgerOn(t, await tn.connect('a'), 'a');
  const b = await ledgerOn(t, await tn.connect('b'), 'b');
  const w = walletId();

  t.equal((await grant(a, w, 100, 'start', 'g-0')).balance, 100);
  t.equal((await charge(b, w, 'j-1', 30)).balance, 70, "b decides on a head read, after a's write");
  // a's guess (100) is stale: the compare-and-set refuses it and a decides again on 70
  t.equal((await charge(a, w, 'j-2', 30)).balance, 40);
  // b's guess says 70: a charge of 50 must be refused on the real 40
  t.equal(await refusal(charge(b, w, 'j-3', 50)), 'insufficient_funds');
  // a's guess says 40; b grants 500: a charge of 300 must be accepted on the real 540
  t.equal((await grant(b, w, 500, 'more', 'g-1')).balance, 540);
  t.equal((await charge(a, w, 'j-3', 300)).balance, 240, 'a refusal on a stale guess is decided again on the stream');
  // a charge already written by the other writer is found, not written again
  const again = await charge(b, w, 'j-3', 300);
  t.same([again.duplicate, again.balance], [true, 240]);
  const againA = await charge(a, w, 'j-1', 30);
  t.same([againA.duplicate, againA.balance], [true, 240]);

  // strict alternation, then both at once
  let expected = 240;
  for (let i = 0; i < 20; i++) {
    const l = i % 2 ? a : b;
    if (i % 5 === 4) {
      expected += 25;
      t.equal((await grant(l, w, 25, 'top', `g-r${i}`)).balance, expected);
    } else {
      expected -= 10;
      t.equal((await charge(l, w, `r-${i}`, 10)).balance, expected);
      t.equal((await charge(i % 2 ? b : a, w, `r-${i}`, 10)).duplicate, true, `r-${i} retried on the other writer: once`);
    }
  }
  const both = await Promise.allSettled(Array.from({ length: 30 }, (_, i) => charge(i % 2 ? a : b, w, `p-${i}`, 20)));
  const ok = both.filter((o) => o.status === 'fulfilled').length;
  t.equal(ok, Math.floor(expected / 20), 'parallel charges on both writers: exactly what the balance covers');
  t.ok(
    both.every((o) => o.status === 'fulfilled' || (o.reason instanceof ApiError && o.reason.code === 'insufficient_funds')),
    'the others refused for lack of funds',
  );
  expected -= ok * 20;

  const entries = (await readLedger(tn.nc)).filter((e) => e.walletId === w);
  t.equal(
    entries.reduce((s, e) => s + e.amount, 0),
    expected,
    'balance = sum of entries',
  );
  t.equal(entries.at(-1)!.balanceAfter, expected);
  t.ok(
    entries.every((e) => e.balanceAfter >= 0),
    'never negative',
  );
  t.equal(new Set(entries.map((e) => e.ref)).size, entries.length, 'every ref written once');
});

t.test('the entry behind the guess deleted by an operator: the next charge is decided on the entry before it', async (t) => {
  const tn = await startTestNats(t);
  const a = await ledgerOn(t, await tn.connect('a'), 'a');
  const w = walletId();
  await grant(a, w, 100, 'start', 'g-0');
  await grant(a, w, 900, 'mistake', 'g-1');
  const jsm = await jetstreamManager(tn.nc);
  const last = await jsm.streams.getMessage(STREAMS.ledger, { last_by_subj: subjects.ledger(w) });
  await jsm.streams.deleteMessage(STREAMS.ledger, last!.seq);
  t.equal(await refusal(charge(a, w, 'j-1', 500)), 'insufficient_funds', 'the guess (1000) is not trusted for a refusal or a write');
  t.equal((await charge(a, w, 'j-2', 60)).balance, 40);
  t.equal((await charge(a, w, 'j-3', 40)).balance, 0);
});
