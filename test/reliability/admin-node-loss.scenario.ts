// Every admin command on the 3-node cluster while a node is down: the operator needs the audit and
// the status most exactly then. With one node of three killed (the LEDGER leader, the worst one)
// each command succeeds within 15 s; with two killed each fails within 15 s saying the cluster has
// no quorum, not just `timeout`.
import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { startTestSystem, retry } from '../helpers/cluster.ts';
import { connectNats } from '../../shared/nats/connect.ts';
import { STREAMS } from '../../shared/names.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { keysBucket, lookupKey } from '../../shared/keys.ts';
import { admin } from '../wallet/_admin.ts';

t.test('admin commands with one node down, then with two', async (t) => {
  const sys = await startTestSystem(t, { processes: ['wallet'], replicas: 3 });
  const url = sys.cluster.url;
  const nc = await connectNats(url, 'test');
  t.teardown(() => nc.close());

  // some money in the buckets and the ledger before anything fails
  const made = await admin(url, ['key', 'create']);
  t.equal(made.code, 0, made.err);
  const key = made.out.trim();
  const walletId = (await lookupKey(await keysBucket(nc), key))!.walletId;
  await wallet.grant(nc, walletId, 5000, 'before the fault');
  const topups = [];
  for (let i = 0; i < 2; i++) topups.push((await wallet.topupCreate(nc, walletId, 1)).topup.id);

  const jsm = await jetstreamManager(nc);
  const leader = (await jsm.streams.info(STREAMS.ledger)).cluster?.leader;
  const victim = sys.cluster.nodes.findIndex((n) => leader?.endsWith(n.name));
  t.ok(victim >= 0, `the LEDGER leader is ${leader}`);
  await sys.cluster.kill(victim);

  const timed = async (args: string[]) => {
    const t0 = Date.now();
    const r = await admin(url, args);
    return { ...r, ms: Date.now() - t0 };
  };
  const oneDown: [string, string[], RegExp][] = [
    ['audit', ['audit'], /ok: no violation/],
    ['key create', ['key', 'create'], /^pk_/],
    ['wallet grant', ['wallet', 'grant', key, '700', '--reason', 'node down'], /\+700 Payloads/],
    ['topup pay', ['topup', 'pay', topups[0]!], /paid/],
    ['status', ['status'], /NATS servers/],
  ];
  for (const [name, args, expect] of oneDown) {
    const r = await timed(args);
    t.equal(r.code, 0, `${name} succeeds with one node down (${r.ms} ms): ${r.err}`);
    t.match(r.out, expect, name);
    t.ok(r.ms < 15_000, `${name} answered within 15 s (${r.ms} ms)`);
  }
  const status = await timed(['status']);
  t.match(status.out, new RegExp(`${sys.cluster.nodes[victim]!.name}.*down`), 'status names the node that is down');
  // the grant went in once, the top-up was credited once
  t.equal((await retry(() => wallet.balance(nc, walletId))).balance, 5000 + 700 + 10000, 'balance: grant + node-down grant + one top-up');

  // two of three down: no quorum, said as such, and quickly
  const second = sys.cluster.nodes.findIndex((n, i) => i !== victim && n.handle);
  await sys.cluster.kill(second);
  const noQuorum: [string, string[]][] = [
    ['audit', ['audit']],
    ['key create', ['key', 'create']],
    ['wallet grant', ['wallet', 'grant', walletId, '1', '--reason', 'no quorum']],
    ['topup pay', ['topup', 'pay', topups[1]!]],
    ['status', ['status']],
  ];
  for (const [name, args] of noQuorum) {
    const r = await timed(args);
    t.not(r.code, 0, `${name} fails without quorum`);
    t.match(r.err + r.out, /no quorum/i, `${name} says the cluster has no quorum: ${(r.err + r.out).trim().split('\n').at(-1)}`);
    t.ok(r.ms < 15_000, `${name} failed within 15 s (${r.ms} ms)`);
  }
});
