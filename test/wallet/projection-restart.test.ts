// The wallet's ledger projection survives a restart (issue 26): it is kept on disk with the LEDGER
// sequence it has applied and catches up from there (counted: only the entries written while it was
// stopped are applied at start), and a file from another store, or ahead of the stream, is thrown
// away and rebuilt, never trusted.
import t from 'tap';
import Database from 'better-sqlite3';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startTestNats, tempDir, testLog } from '../helpers/nats.ts';
import { Ledger } from '../../actors/wallet/ledger.ts';
import { Projection, MAX_SLOTS } from '../../actors/wallet/projection.ts';
import { charge, refund } from '../../actors/wallet/money.ts';
import { writeLedgerHistory, historyWallet, GRANT, CHARGE } from '../../bench/lib/ledger-history.ts';
import type { NatsConnection } from '@nats-io/nats-core';
import { startWallet, walletId } from './_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';

type Tap = { teardown(fn: () => unknown): void };

/** History is written fast (no fsync per write): only its reading is tested here. */
const FAST = { nats: { syncInterval: '2m' } };

async function open(t: Tap, nc: NatsConnection, dir: string) {
  const projection = new Projection(dir);
  const ledger = new Ledger(nc, projection, testLog());
  await ledger.start();
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await ledger.stop();
    projection.close();
  };
  t.teardown(stop);
  return { ledger, projection, stop };
}

async function caughtUp(ledger: Ledger) {
  for (let i = 0; i < 600 && ledger.stats.caughtUpMs === null; i++) await new Promise((r) => setTimeout(r, 50));
  return ledger.stats.caughtUpMs !== null;
}

t.test('a restart on a store with history catches up from the checkpoint instead of replaying', async (t) => {
  const tn = await startTestNats(t, FAST);
  const dir = tempDir('payloads-proj-restart-');
  await writeLedgerHistory(tn.nc, { entries: 3000, wallets: 100, prefix: 'a', batch: 500 });
  const first = await open(t, tn.nc, dir);
  t.ok(await caughtUp(first.ledger), 'the first start catches up');
  t.equal(first.ledger.stats.appliedSinceStart, 3000, 'a new file applies every entry once');
  t.equal(first.ledger.stats.rebuilt, true, 'a new file counts as a rebuild');
  await first.stop();

  // written while the wallet was stopped
  await writeLedgerHistory(tn.nc, { entries: 40, wallets: 4, prefix: 'b' });
  const second = await open(t, tn.nc, dir);
  t.equal(second.projection.file, first.projection.file, 'the same file is opened again, not a new one');
  t.ok(await caughtUp(second.ledger));
  t.equal(second.ledger.stats.from, 3000, 'resumes after the checkpoint');
  t.equal(second.ledger.stats.appliedSinceStart, 40, 'only the 40 entries written while stopped are applied');
  t.equal(second.ledger.stats.rebuilt, false);
  t.equal(second.projection.count(), 3040, 'every entry is in the projection once');
  // the money path answers from the kept rows: a retried charge of the history is a duplicate
  const w = historyWallet('a', 7);
  const again = await charge(second.ledger, w, 'aj107', CHARGE);
  t.equal(again.duplicate, true, 'a charge made before the restart is known after it');
  t.equal(again.balance, GRANT - 29 * CHARGE);
  await second.stop();
  t.equal(readdirSync(dir).filter((f) => f.endsWith('.sqlite')).length, 1, 'one projection file after three starts');
});

t.test('a projection file from another store, or ahead of the stream, is rebuilt', async (t) => {
  const a = await startTestNats(t, FAST);
  const b = await startTestNats(t, FAST);
  const dir = tempDir('payloads-proj-other-');
  await writeLedgerHistory(a.nc, { entries: 500, wallets: 10, prefix: 'a' });
  await writeLedgerHistory(b.nc, { entries: 200, wallets: 5, prefix: 'b' });
  const onA = await open(t, a.nc, dir);
  t.ok(await caughtUp(onA.ledger));
  await onA.stop();

  // the same file against another store's LEDGER (same name, another stream)
  const onB = await open(t, b.nc, dir);
  t.equal(onB.ledger.stats.rebuilt, true, 'another store: rebuilt');
  t.equal(onB.ledger.stats.from, 0);
  t.ok(await caughtUp(onB.ledger));
  t.equal(onB.projection.count(), 200, "only the other store's entries, none of the first");
  t.equal(onB.projection.byRef(historyWallet('a', 3), 'charge:aj13'), undefined, 'a row of the first store is gone');
  const file = onB.projection.file;
  await onB.stop();

  // a checkpoint ahead of the stream's last sequence (e.g. a store restored from an older backup)
  const db = new Database(file);
  db.prepare("UPDATE meta SET value = '999999' WHERE key = 'applied'").run();
  db.close();
  const ahead = await open(t, b.nc, dir);
  t.equal(ahead.ledger.stats.rebuilt, true, 'ahead of the stream: rebuilt');
  t.ok(await caughtUp(ahead.ledger));
  t.equal(ahead.projection.count(), 200);
  await ahead.stop();

  // same stream and created time, but the entry at the checkpoint differs (another copy of the store)
  const db2 = new Database(file);
  db2.prepare("UPDATE entries SET ref = 'charge:forged' WHERE id = 200").run();
  db2.close();
  const forged = await open(t, b.nc, dir);
  t.equal(forged.ledger.stats.rebuilt, true, 'the entry at the checkpoint differs: rebuilt');
  t.ok(await caughtUp(forged.ledger));
  t.ok(forged.projection.byRef(historyWallet('b', 0), 'charge:bj195'), "the stream's entry is back");
});

t.test("while the projection rebuilds, the money path reads the wallet's own entries, not the whole stream", async (t) => {
  const tn = await startTestNats(t, { nats: { syncInterval: '2m' } });
  await writeLedgerHistory(tn.nc, { entries: 60_000, wallets: 1000, prefix: 'r' });
  const w = historyWallet('r', 999); // its last entries are at the end of the stream
  const { ledger } = await open(t, tn.nc, tempDir('payloads-proj-rebuild-'));
  t.equal(ledger.stats.rebuilt, true);
  // decided on the wallet's complete history whatever the rebuild has reached: a duplicate, and a
  // refund of a charge near the stream's end
  const dup = await charge(ledger, w, 'rj59999', CHARGE);
  t.equal(dup.duplicate, true, 'the last charge of the stream is known at once');
  const back = await refund(ledger, w, 'rj59999', 'k', CHARGE);
  t.equal(back.duplicate, false);
  t.equal(back.balance, GRANT - 59 * CHARGE + CHARGE);
  t.comment(
    `rebuild caught up before the charge: ${ledger.stats.caughtUpMs !== null}; entries read per wallet: ${ledger.stats.walletCatchUps}`,
  );
  t.ok(await caughtUp(ledger));
});

t.test('the wallet actor keeps its projection file across restarts and a failed start names its step', async (t) => {
  const tn = await startTestNats(t);
  const w = walletId();
  const one = await startWallet(t, tn);
  await wallet.grant(tn.nc, w, 500, 'funds');
  await one.stop();
  const two = await startWallet(t, tn);
  const { entries } = await wallet.transactions(tn.nc, w);
  t.equal(entries.length, 1, 'the listing answers after the restart');
  await two.stop();
  const files = readdirSync(join(tn.config.dataDir, 'wallet')).filter((f) => f.endsWith('.sqlite'));
  t.same(files, ['ledger-0.sqlite'], 'two starts, one file');

  // every slot held by a running instance: the start fails with the step's name, leaves nothing running
  const held = Array.from({ length: MAX_SLOTS }, () => new Projection(join(tn.config.dataDir, 'wallet')));
  t.teardown(() => held.forEach((p) => p.close()));
  const { start } = await import('../../actors/wallet/index.ts');
  await t.rejects(
    start({ nc: tn.nc, config: tn.config, log: testLog(), instanceId: 'full' }),
    /wallet start failed at "open the ledger projection": every ledger projection slot/,
  );
});
