// The periodic reconciliation (issue 26): it looks at the top-ups on the work list the top-up watch
// keeps in the projection's file, not at every top-up ever made, and at a fixed slice of a rolling
// pass over all of them. A top-up leaves the list once the node's word on it is final and the ledger
// agrees; the list survives a restart; a new file does not put back the top-ups long final. Against
// a local LND REST server (test/wallet/_nodes.ts).
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { startTestNats, tempDir, testLog, type TestNats } from '../helpers/nats.ts';
import { RECONCILED_AFTER_MS } from '../../actors/wallet/topups.ts';
import { reconcileRecent } from '../../actors/wallet/reconcile.ts';
import { BUCKETS } from '../../shared/names.ts';
import { wallet, type TopupRecord } from '../../shared/protocol/wallet.ts';
import { openTopups, startWallet, walletId } from './_helpers.ts';
import { fakeLnd, type FakeNode } from './_nodes.ts';

// polling slow enough that only reconciliation settles a payment within a test
const LIGHTNING = { pollMs: 600_000, maxPollMs: 600_000, reconcileSeconds: 3600, maxUnpaidTopups: 10 };

async function open(tn: TestNats, dir: string) {
  const parts = await openTopups(tn, dir);
  const { ledger, topups } = parts;
  /** A periodic run; `sweep` 0: the work list alone. */
  const run = (sweep = 0) => reconcileRecent({ nc: tn.nc, ledger, topups, backend: topups.backend, sweep, log: testLog() });
  return { ...parts, run };
}

const until = async (f: () => boolean) => {
  for (let i = 0; i < 200 && !f(); i++) await new Promise((r) => setTimeout(r, 50));
  return f();
};

async function hashOf(tn: TestNats, id: string): Promise<string> {
  return (await (await new Kvm(tn.nc).open(BUCKETS.topups)).get(id))!.json<TopupRecord>().paymentHash;
}

async function setup(t: Tap) {
  const node: FakeNode = await fakeLnd(t);
  const tn = await startTestNats(t, { wallet: { lightning: { ...node.lightning, ...LIGHTNING } } });
  return { node, tn };
}
type Tap = { teardown(fn: () => unknown): void };

t.test('each run looks at the top-ups not yet final, and credits a payment only the node knows of', async (t) => {
  const { node, tn } = await setup(t);
  const w = walletId();
  const a = await open(tn, tempDir('payloads-reconcile-recent-'));
  t.teardown(() => a.stop());
  const made: string[] = [];
  for (let i = 0; i < 5; i++) made.push((await a.topups.create(w, 1)).topup.id);
  t.ok(await until(() => a.topups.kept.unreconciled().length === 5), 'every new top-up is on the list');
  // four paid at the node; the wallet's own polling is slow, so only reconciliation sees it
  for (const id of made.slice(0, 4)) node.pay(await hashOf(tn, id));

  const first = await a.run();
  t.equal(first.topups, 5, 'the first run looks at all five');
  t.equal(first.paidInvoices, 4);
  t.same(first.credited.map((c) => c.topupId).sort(), made.slice(0, 4).sort(), 'the four paid ones credited');
  t.equal((await a.ledger.head(w)).balance, 40_000, 'each credited once');
  const kv = await new Kvm(tn.nc).open(BUCKETS.topups);
  for (const id of made.slice(0, 4)) t.equal((await kv.get(id))!.json<TopupRecord>().status, 'paid', `${id} marked paid`);

  // the paid documents changed (pending → paid): the watch may put them back (five made, four
  // changed), and the next run finds them final and credited; then only the open invoice is left
  t.ok(await until(() => a.topups.watched >= 9), 'the watch saw the four changes');
  const second = await a.run();
  t.same(second.credited, [], 'nothing credited twice');
  t.same(a.topups.kept.unreconciled(), [made[4]], 'only the open invoice stays on the list');
  const third = await a.run();
  t.equal(third.topups, 1, 'the next run looks at that one only, not at the history');
  t.equal((await a.ledger.head(w)).balance, 40_000);
});

t.test("the list is kept in the projection's file: a payment made while the wallet was down is credited after the restart", async (t) => {
  const { node, tn } = await setup(t);
  const w = walletId();
  const dir = tempDir('payloads-reconcile-recent-');
  const first = await open(tn, dir);
  const id = (await first.topups.create(w, 2)).topup.id;
  t.ok(await until(() => first.topups.kept.unreconciled().includes(id)));
  await first.stop();
  node.pay(await hashOf(tn, id));

  const second = await open(tn, dir);
  t.teardown(() => second.stop());
  t.ok(second.topups.resumedFrom > 0, 'the file was kept (the watch resumed)');
  t.same(second.topups.kept.unreconciled(), [id], 'the top-up is still on the list');
  const r = await second.run();
  t.same(
    r.credited.map((c) => [c.topupId, c.walletId, c.payloads]),
    [[id, w, 20_000]],
    'credited by the first run after the restart',
  );
  t.equal((await second.ledger.head(w)).balance, 20_000);
});

t.test('a new file puts back the top-ups that are pending or changed lately, not those long final', async (t) => {
  const { tn } = await setup(t);
  const w = walletId();
  const kv = await new Kvm(tn.nc).open(BUCKETS.topups);
  const first = await open(tn, tempDir('payloads-reconcile-recent-'));
  const recent = (await first.topups.create(w, 1)).topup.id;
  const pending = (await first.topups.create(w, 1)).topup.id;
  await first.stop();
  // a top-up expired two days ago, and one made lately that expired
  const doc = (await kv.get(recent))!.json<TopupRecord>();
  const old: TopupRecord = {
    ...doc,
    id: 'old-expired',
    status: 'expired',
    createdAt: Date.now() - 2 * RECONCILED_AFTER_MS,
    updatedAt: Date.now() - 2 * RECONCILED_AFTER_MS,
  };
  await kv.put(old.id, JSON.stringify(old));
  await kv.put(recent, JSON.stringify({ ...doc, status: 'expired', updatedAt: Date.now() }));

  const fresh = await open(tn, tempDir('payloads-reconcile-recent-'));
  t.teardown(() => fresh.stop());
  t.equal(fresh.topups.resumedFrom, 0, 'a new file reads every current value');
  t.ok(await until(() => fresh.topups.kept.unreconciled().length >= 2));
  t.same(
    fresh.topups.kept.unreconciled().sort(),
    [pending, recent].sort(),
    'the pending one and the one final since a moment; not the one final for two days',
  );
});

t.test('the rolling pass looks at a fixed number of older top-ups per run, and comes round again', async (t) => {
  const { node, tn } = await setup(t);
  const w = walletId();
  const a = await open(tn, tempDir('payloads-reconcile-recent-'));
  t.teardown(() => a.stop());
  const made: string[] = [];
  for (let i = 0; i < 7; i++) made.push((await a.topups.create(w, 1)).topup.id);
  for (const id of made) node.pay(await hashOf(tn, id));
  t.equal((await a.run()).credited.length, 7, 'the list: all seven paid and credited');
  t.ok(await until(() => a.topups.watched >= 14));
  await a.run();
  t.same(a.topups.kept.unreconciled(), [], 'the list is empty: nothing left to look at but the history');

  // the node no longer lists the fifth as paid: found when the pass reaches it, three a run
  node.unpay(await hashOf(tn, made[4]!));
  // leader gets only, as the full run (reconcile-no-consumer.test.ts): no consumer to wait on a dead peer
  const consumers: string[] = [];
  const sub = tn.nc.subscribe('$JS.API.CONSUMER.>', {
    callback: (_e, m) => {
      if (m.subject.includes('KV_topups')) consumers.push(m.subject);
    },
  });
  t.teardown(() => sub.unsubscribe());
  await tn.nc.flush();
  const runs = [];
  for (let i = 0; i < 4; i++) runs.push(await a.run(3));
  await tn.nc.flush();
  t.same(consumers, [], 'no consumer made on the top-ups stream');
  t.same(
    runs.map((r) => r.topups),
    [3, 3, 1, 3],
    'three documents a run; the seventh ends the pass, the next run starts again',
  );
  t.same(
    runs.map((r) => r.unpaidCredits.map((u) => u.topupId)),
    [[], [made[4]], [], []],
    'the credit without a paid invoice is reported by the run whose slice holds it',
  );
  t.same(
    runs.flatMap((r) => r.credited),
    [],
    'nothing credited twice',
  );
  t.equal((await a.ledger.head(w)).balance, 70_000);
});

t.test('the wallet actor runs it every reconcileSeconds', async (t) => {
  const node = await fakeLnd(t);
  const tn = await startTestNats(t, { wallet: { lightning: { ...node.lightning, ...LIGHTNING, reconcileSeconds: 1 } } });
  await startWallet(t, tn);
  const w = walletId();
  const id = (await wallet.topupCreate(tn.nc, w, 1)).topup.id;
  node.pay(await hashOf(tn, id));
  let balance = 0;
  for (let i = 0; i < 100 && balance === 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    balance = (await wallet.balance(tn.nc, w)).balance;
  }
  t.equal(balance, 10_000, 'credited without a poll and without the audit');
});
