// The history generator (scripts/history.ts) writes a store the project's own audit finds clean:
// every wallet's balanceAfter chain, a job document per charge (in the archive), refunds matching the failed
// results, one key per wallet. Run the session-17 way (parts side by side, plain publishes with an
// acknowledged one every few messages) and the old way (one process, every publish acknowledged).
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { startNatsServer } from '../../shared/nats/server.ts';
import { connectNats } from '../../shared/nats/connect.ts';
import { audit } from '../../shared/audit.ts';
import { keysBucket, lookupKey } from '../../shared/keys.ts';
import { BUCKETS, STREAMS } from '../../shared/names.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const JOBS = 400;
const WALLETS = 7;
const ENTRIES = 1000;

for (const [label, args] of [
  ['3 parts, an ack every 7 messages', ['--parts', '3', '--ack-every', '7', '--window', '2']],
  ['1 part, every message acknowledged', ['--parts', '1', '--ack-every', '1']],
] as const) {
  t.test(`${label}: the store holds exactly what was written, and the audit finds it clean`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'history-gen-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const stdout = await new Promise<string>((res, rej) => {
      execFile(
        process.execPath,
        [
          join(ROOT, 'scripts/history.ts'),
          '--jobs',
          String(JOBS),
          '--wallets',
          String(WALLETS),
          '--entries',
          String(ENTRIES),
          '--data-dir',
          dir,
          ...args,
        ],
        {
          cwd: ROOT,
          env: { ...process.env, NATS_URL: '' },
          timeout: 240_000,
        },
        (err, so, se) => (err ? rej(new Error(`${err.message}\n${se}`)) : res(so)),
      );
    });
    t.match(
      stdout,
      new RegExp(`wrote ${WALLETS} wallets \\(keys\\), ${JOBS} jobs, ${ENTRIES} ledger entries \\(${WALLETS + JOBS + ENTRIES} messages\\)`),
    );

    const server = await startNatsServer({ storeDir: join(dir, 'nats'), port: -1 });
    const nc = await connectNats(server.url, 'history-gen-test');
    t.teardown(async () => {
      await nc.close();
      await server.stop();
    });
    const jsm = await jetstreamManager(nc);
    t.equal((await jsm.streams.info(STREAMS.ledger)).state.messages, ENTRIES, 'ledger entries');
    t.equal((await jsm.streams.info(STREAMS.ledger)).state.num_subjects, WALLETS, 'one ledger subject per wallet');
    t.equal(
      (await jsm.streams.info(STREAMS.jobsArchive)).state.messages,
      JOBS,
      'job documents, archived as the supervisor leaves a job whose results expired',
    );
    t.equal((await jsm.streams.info(`KV_${BUCKETS.jobs}`)).state.messages, 0, 'none in the bucket');
    t.equal((await jsm.streams.info(`KV_${BUCKETS.keys}`)).state.messages, WALLETS, 'keys');

    const r = await audit(nc, {});
    t.ok(r.complete, 'the audit read everything');
    t.same(r.violations, [], 'no violation: chains, charges with documents, refunds with failed results');
    t.equal(r.wallets, WALLETS);
    t.equal(r.entries, ENTRIES);
    t.equal(r.jobs, JOBS);

    const sample = JSON.parse(readFileSync(join(dir, 'history-keys.json'), 'utf8')) as { key: string; walletId: string }[];
    t.equal(sample.length, 5, 'five sample keys');
    const kv = await keysBucket(nc);
    for (const s of sample) t.equal((await lookupKey(kv, s.key))?.walletId, s.walletId, 'a sample key opens its wallet');
    t.ok(
      sample.every((s) => s.walletId in r.balances),
      'sample wallets hold ledger entries',
    );
  });
}
