// The "last sequence as of now" behind each batch of balance reads (gateway/balances.ts): a direct
// get of the ledger's last message where that is strict (one replica: the ledger allows direct gets
// only then, shared/nats/provision.ts), a stream-info request otherwise. Either way every ledger
// write acknowledged before a read is in its answer.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import { startTestApp } from '../helpers/app.ts';
import { startTestNats, testConfig } from '../helpers/nats.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { provision, streamConfigs } from '../../shared/nats/provision.ts';
import { STREAMS } from '../../shared/names.ts';

/** Counts the JetStream API requests on the ledger by kind while `fn` runs. */
async function ledgerApiCalls(app: Awaited<ReturnType<typeof startTestApp>>, fn: () => Promise<void>) {
  const calls = { direct: 0, info: 0 };
  const direct = app.nc.subscribe(`$JS.API.DIRECT.GET.${STREAMS.ledger}`, {
    callback: () => {
      calls.direct++;
    },
  });
  const info = app.nc.subscribe(`$JS.API.STREAM.INFO.${STREAMS.ledger}`, {
    callback: () => {
      calls.info++;
    },
  });
  await app.nc.flush();
  await fn();
  await app.nc.flush();
  direct.unsubscribe();
  info.unsubscribe();
  return calls;
}

t.test('the ledger allows direct gets with one replica and not when replicated', async (t) => {
  const ledger = (replicas: number) => streamConfigs(testConfig({ nats: { replicas } })).find((s) => s.name === STREAMS.ledger)!;
  t.equal(ledger(1).allow_direct, true);
  t.equal(ledger(3).allow_direct, false, 'a replica that lags could answer a direct get with an older sequence');
});

t.test('a ledger made before (no direct gets) allows them after the next start', async (t) => {
  const tn = await startTestNats(t);
  const jsm = await jetstreamManager(tn.nc);
  const cfg = (await jsm.streams.info(STREAMS.ledger)).config;
  await jsm.streams.update(STREAMS.ledger, { ...cfg, allow_direct: false });
  await provision(tn.nc, tn.config);
  t.equal((await jsm.streams.info(STREAMS.ledger)).config.allow_direct, true);
});

t.test('one replica: reads ask the last sequence by direct get and see every write made before them', async (t) => {
  const app = await startTestApp(t, { actors: ['wallet'] });
  const { key, walletId } = await app.newKey();
  const balance = async () => (await app.request('GET', '/v1/balance', { key })).json.balance as number;
  await wallet.grant(app.nc, walletId, 10_000, 'test funds');
  t.equal(await balance(), 10_000);
  let stale = 0;
  const calls = await ledgerApiCalls(app, async () => {
    for (let i = 1; i <= 10; i++) {
      await wallet.charge(app.nc, { walletId, jobId: `j${i}`, amount: 100 });
      if ((await balance()) !== 10_000 - 100 * i) stale++;
    }
  });
  t.equal(stale, 0, 'each answer includes the charge made just before it');
  t.ok(calls.direct >= 10, `a direct get per read (${calls.direct}); fails while every read asks for the stream info`);
  t.equal(calls.info, 0, 'no stream-info request');
});

t.test('direct gets turned off on the server (the ledger replicated since): reads fall back to stream info, still as of now', async (t) => {
  const app = await startTestApp(t, { actors: ['wallet'] });
  const { key, walletId } = await app.newKey();
  const balance = async () => (await app.request('GET', '/v1/balance', { key })).json.balance as number;
  await wallet.grant(app.nc, walletId, 5000, 'test funds');
  t.equal(await balance(), 5000);
  const jsm = await jetstreamManager(app.nc);
  const cfg = (await jsm.streams.info(STREAMS.ledger)).config;
  await jsm.streams.update(STREAMS.ledger, { ...cfg, allow_direct: false });
  let stale = 0;
  const calls = await ledgerApiCalls(app, async () => {
    for (let i = 1; i <= 5; i++) {
      await wallet.charge(app.nc, { walletId, jobId: `k${i}`, amount: 100 });
      if ((await balance()) !== 5000 - 100 * i) stale++;
    }
  });
  t.equal(stale, 0, 'each answer includes the charge made just before it');
  t.ok(calls.info >= 5, `a stream-info request per read (${calls.info})`);
  t.ok(calls.direct <= 1, `at most the one direct get that found them off (${calls.direct})`);
  // allowed again (replicas back to one): the stream info says so, and after the pause reads use direct gets again
  await jsm.streams.update(STREAMS.ledger, { ...cfg, allow_direct: true });
  await balance();
  await sleep(5500);
  const again = await ledgerApiCalls(app, async () => {
    for (let i = 6; i <= 8; i++) {
      await wallet.charge(app.nc, { walletId, jobId: `k${i}`, amount: 100 });
      if ((await balance()) !== 5000 - 100 * i) stale++;
    }
  });
  t.equal(stale, 0);
  t.ok(again.direct >= 3, `direct gets again (${again.direct})`);
  t.equal(again.info, 0, 'no stream-info request');
});
