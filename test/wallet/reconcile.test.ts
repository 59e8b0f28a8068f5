// Reconciliation with the Lightning node, on each backend: a top-up is paid and credited, the credit
// is then lost (its ledger entry deleted while the wallet is down: what an unsynced write loses in a
// power cut), and reconciliation credits it again, exactly once, however often it runs. A credit
// whose invoice the node does not list as paid is reported, not taken back.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { startTestNats, type TestNats } from '../helpers/nats.ts';
import { startNatsServer } from '../../shared/nats/server.ts';
import { startWallet, walletId } from './_helpers.ts';
import { wallet, type TopupRecord } from '../../shared/protocol/wallet.ts';
import { BUCKETS, STREAMS } from '../../shared/names.ts';
import { audit, readLedger } from '../../shared/audit.ts';
import { admin } from './_admin.ts';
import { fakeCln, fakeLnbits, fakeLnd, type FakeNode } from './_nodes.ts';

type Tap = { teardown(fn: () => unknown): void };

async function topupRecord(tn: TestNats, id: string): Promise<TopupRecord> {
  const kv = await new Kvm(tn.nc).open(BUCKETS.topups);
  return (await kv.get(id))!.json<TopupRecord>();
}

async function waitStatus(tn: TestNats, id: string, status: string) {
  for (let i = 0; i < 100; i++) {
    if ((await topupRecord(tn, id)).status === status) return;
    await sleep(100);
  }
  throw new Error(`top-up ${id} did not become ${status}`);
}

/** The credit entries of a top-up in the LEDGER stream itself. */
async function credits(tn: TestNats, w: string, topupId: string) {
  return (await readLedger(tn.nc)).filter((e) => e.walletId === w && e.ref === `topup:${topupId}`);
}

/**
 * Lose a top-up's credit as a power cut would: the entry is gone from the stream and the server
 * restarts (on the same port and store), so it also forgets the entry's message id, as a server
 * that never had the write on disk does. The wallet must be stopped.
 */
async function loseCredit(t: Tap, tn: TestNats, w: string, topupId: string) {
  const [entry] = await credits(tn, w, topupId);
  await (await jetstreamManager(tn.nc)).streams.deleteMessage(STREAMS.ledger, entry!.seq);
  await tn.server.stop();
  const again = await startNatsServer({ storeDir: tn.server.storeDir, port: tn.server.port });
  t.teardown(() => again.stop('SIGKILL'));
  // the test's connection reconnects on its own, and JetStream answers once the store is loaded
  for (let i = 0; ; i++) {
    try {
      await (await jetstreamManager(tn.nc, { timeout: 1000 })).streams.info(STREAMS.ledger);
      return;
    } catch (e) {
      if (i > 100) throw e;
      await sleep(100);
    }
  }
}

/** The dev backend's "node" is its KV bucket: paid through the operator command, unpaid by rewriting the entry. */
function devNode(tn: TestNats): FakeNode & { payTopup(id: string): Promise<void>; unpayAsync(hash: string): Promise<void> } {
  return {
    lightning: { backend: 'dev' },
    pay: () => {
      throw new Error('use payTopup');
    },
    unpay: () => {
      throw new Error('use unpayAsync');
    },
    hashes: () => [],
    async payTopup(id) {
      await wallet.topupPay(tn.nc, id);
    },
    async unpayAsync(hash) {
      const kv = await new Kvm(tn.nc).open(BUCKETS.devInvoices);
      const inv = (await kv.get(hash))!.json<Record<string, unknown>>();
      await kv.put(hash, JSON.stringify({ ...inv, state: 'open' }));
    },
  };
}

async function scenario(t: import('tap').Test, backend: 'dev' | 'lnd' | 'lnbits' | 'cln') {
  const node =
    backend === 'lnd' ? await fakeLnd(t) : backend === 'lnbits' ? await fakeLnbits(t) : backend === 'cln' ? await fakeCln(t) : null;
  const tn = await startTestNats(t, {
    wallet: { lightning: { ...(node?.lightning ?? { backend: 'dev' }), pollMs: 100, maxPollMs: 200, reconcileSeconds: 3600 } },
  });
  const dev = node ? null : devNode(tn);
  let w1 = await startWallet(t, tn);
  const w = walletId();
  const a = (await wallet.topupCreate(tn.nc, w, 2)).topup;
  const b = (await wallet.topupCreate(tn.nc, w, 1)).topup; // never paid
  const ha = (await topupRecord(tn, a.id)).paymentHash;
  if (dev) await dev.payTopup(a.id);
  else node!.pay(ha);
  await waitStatus(tn, a.id, 'paid');
  t.same(await wallet.balance(tn.nc, w), { balance: 20_000 }, 'paid and credited the normal way');
  t.same((await wallet.reconcile(tn.nc)).credited, [], 'nothing to restore while the ledger is whole');

  // The credit is lost (a power cut before it was on disk): the top-up document still says paid.
  await w1.stop();
  await loseCredit(t, tn, w, a.id);
  t.same(await credits(tn, w, a.id), [], 'the credit is gone from the ledger');
  t.match((await audit(tn.nc)).violations, [new RegExp(`topup ${a.id}: paid but credited 0 times`)], 'the audit sees the loss');
  w1 = await startWallet(t, tn);
  t.same(await wallet.balance(tn.nc, w), { balance: 0 });

  const first = await wallet.reconcile(tn.nc);
  t.equal(first.backend, backend);
  t.same(
    first.credited.map((c) => [c.topupId, c.walletId, c.payloads]),
    [[a.id, w, 20_000]],
    'the paid invoice with no credit is credited',
  );
  t.equal(first.paidInvoices, 1);
  t.same(first.unpaidCredits, []);
  t.same(await wallet.balance(tn.nc, w), { balance: 20_000 }, 'balance restored');
  const again = await Promise.all([wallet.reconcile(tn.nc), wallet.reconcile(tn.nc)]);
  t.same(
    again.map((r) => r.credited),
    [[], []],
    'running again restores nothing more',
  );
  t.equal((await credits(tn, w, a.id)).length, 1, 'exactly one credit in the ledger');
  t.same(await wallet.balance(tn.nc, w), { balance: 20_000 });
  t.equal((await topupRecord(tn, b.id)).status, 'pending', 'the unpaid top-up is left alone');
  t.same((await audit(tn.nc)).violations, [], 'audit clean');

  // The node no longer lists the invoice as paid: reported, not taken back.
  if (dev) await dev.unpayAsync(ha);
  else node!.unpay(ha);
  const odd = await wallet.reconcile(tn.nc);
  t.same(
    odd.unpaidCredits.map((u) => [u.topupId, u.walletId, u.payloads, u.paymentHash]),
    [[a.id, w, 20_000, ha]],
    'a credit with no paid invoice is reported',
  );
  t.same(await wallet.balance(tn.nc, w), { balance: 20_000 }, 'and not taken back');
}

for (const backend of ['dev', 'lnd', 'lnbits', 'cln'] as const) {
  t.test(`${backend}: a lost top-up credit is restored exactly once; a credit without a paid invoice is reported`, async (t) => {
    await scenario(t, backend);
  });
}

t.test('a pending top-up whose invoice was paid is settled by reconciliation too (no poll needed)', async (t) => {
  const node = await fakeCln(t);
  // polling every 10 minutes: only reconciliation can find the payment in this test's time
  const tn = await startTestNats(t, {
    wallet: { lightning: { ...node.lightning, pollMs: 600_000, maxPollMs: 600_000, reconcileSeconds: 3600 } },
  });
  await startWallet(t, tn);
  const w = walletId();
  const a = (await wallet.topupCreate(tn.nc, w, 1)).topup;
  node.pay(node.hashes()[0]!);
  const r = await wallet.reconcile(tn.nc);
  t.same(
    r.credited.map((c) => c.topupId),
    [a.id],
  );
  t.equal((await topupRecord(tn, a.id)).status, 'paid', 'the top-up document is marked paid as well');
  t.same(await wallet.balance(tn.nc, w), { balance: 10_000 });
  t.same((await audit(tn.nc)).violations, []);
});

t.test('the periodic wallet task restores a lost credit without being asked', async (t) => {
  const tn = await startTestNats(t, { wallet: { lightning: { backend: 'dev', reconcileSeconds: 1 } } });
  let w1 = await startWallet(t, tn);
  const w = walletId();
  const a = (await wallet.topupCreate(tn.nc, w, 1)).topup;
  await wallet.topupPay(tn.nc, a.id);
  await w1.stop();
  await loseCredit(t, tn, w, a.id);
  w1 = await startWallet(t, tn);
  let balance = 0;
  for (let i = 0; i < 100 && balance === 0; i++) {
    await sleep(100);
    balance = (await wallet.balance(tn.nc, w)).balance;
  }
  t.equal(balance, 10_000, 'restored by the timer');
  await sleep(1500);
  t.equal((await credits(tn, w, a.id)).length, 1, 'once, after more runs');
});

t.test('npm run admin -- audit reconciles first: CREDITED line, then clean; no wallet running is said', async (t) => {
  const tn = await startTestNats(t, { wallet: { lightning: { backend: 'dev' } } });
  let w1 = await startWallet(t, tn);
  const w = walletId();
  const a = (await wallet.topupCreate(tn.nc, w, 1.5)).topup;
  await wallet.topupPay(tn.nc, a.id);
  await w1.stop();
  await loseCredit(t, tn, w, a.id);

  const down = await admin(tn.server.url, ['audit']);
  t.equal(down.code, 1, 'without a wallet: the invariant check still runs and finds the loss');
  t.match(down.out, /lightning: not reconciled .*is a wallet running\?/);
  t.match(down.out, new RegExp(`VIOLATION topup ${a.id}: paid but credited 0 times`));

  w1 = await startWallet(t, tn);
  const fixed = await admin(tn.server.url, ['audit']);
  t.equal(fixed.code, 0, fixed.out + fixed.err);
  t.match(
    fixed.out,
    new RegExp(`CREDITED topup ${a.id}: invoice [0-9a-f]{64} was paid but not in the ledger; 15000 Payloads to wallet ${w}`),
  );
  t.match(fixed.out, /ok: no violation/);
  const again = await admin(tn.server.url, ['audit']);
  t.equal(again.code, 0);
  t.notMatch(again.out, /CREDITED/, 'nothing restored the second time');
  t.same(await wallet.balance(tn.nc, w), { balance: 15_000 });
});
