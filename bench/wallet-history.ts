// The wallet against a long history (issue 26): start time and RSS, the projection's catch-up, disk
// per ledger entry and per projection row, and the gateway's balance read at 1 vs many wallets.
//
//   node --import tsx bench/wallet-history.ts [entries=300000] [wallets=100000] [store=/tmp/wallet-history-store]
//
// The store is filled once (ledger entries in the project's record format with correct balanceAfter
// chains, bench/lib/ledger-history.ts) and reused by later runs with the same sizes. Each run starts
// the wallet twice in a child process: with an empty data folder (a projection built from nothing:
// the old code's every start) and again on the same folder (a restart). To measure code from before
// a change, run this file from a copy of that tree (`git archive <commit> | tar -x -C DIR`, copy this
// file and bench/lib/{ledger-history,wallet-start}.ts there, symlink node_modules).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { jetstreamManager } from '@nats-io/jetstream';
import { startNatsServer } from '../shared/nats/server.ts';
import { connectNats } from '../shared/nats/connect.ts';
import { provision } from '../shared/nats/provision.ts';
import { loadConfig } from '../shared/config/index.ts';
import { STREAMS, subjects } from '../shared/names.ts';
import { writeLedgerHistory, historyWallet } from './lib/ledger-history.ts';

const [entries = 300_000, wallets = 100_000] = process.argv.slice(2, 4).map(Number);
const storeRoot = process.argv[4] ?? '/tmp/wallet-history-store';
const storeDir = join(storeRoot, `${entries}-${wallets}`);
const fresh = !existsSync(storeDir);
mkdirSync(storeDir, { recursive: true });

const server = await startNatsServer({ storeDir: join(storeDir, 'nats'), port: -1, syncInterval: '2m' });
const config = loadConfig({ env: {}, noDefaultFile: true, overrides: { dataDir: join(storeDir, 'data'), nats: { url: server.url } } });
const nc = await connectNats(server.url, 'bench');
await provision(nc, config);
const jsm = await jetstreamManager(nc);
if (fresh || (await jsm.streams.info(STREAMS.ledger)).state.messages < entries) {
  const t0 = performance.now();
  await writeLedgerHistory(nc, {
    entries,
    wallets,
    prefix: 'h',
    at: Date.now(),
    onProgress: (n) => {
      if (n % 100_000 === 0) console.error(`written ${n}`);
    },
  });
  console.error(`history: ${entries} entries over ${wallets} wallets in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}
const info = await jsm.streams.info(STREAMS.ledger);
const dirBytes = (d: string): number =>
  readdirSync(d, { withFileTypes: true }).reduce(
    (s, e) => s + (e.isDirectory() ? dirBytes(join(d, e.name)) : statSync(join(d, e.name)).size),
    0,
  );
const ledgerDir =
  [
    join(storeDir, 'nats', 'jetstream', 'jetstream', '$G', 'streams', STREAMS.ledger),
    join(storeDir, 'nats', 'jetstream', '$G', 'streams', STREAMS.ledger),
  ].find(existsSync) ?? '';
const ledgerDisk = ledgerDir ? dirBytes(ledgerDir) : NaN;

const rssMb = (pid: number) => {
  try {
    return Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024);
  } catch {
    return NaN;
  }
};

const oldCode = !existsSync('actors/wallet/topups-kept.ts');

/** One wallet start in a child: ms to 'wallet started' and to 'caught up', RSS at each and 10 s after. */
async function walletStart(dataDir: string, limitMs = 240_000) {
  const child = spawn(process.execPath, ['bench/lib/wallet-start.ts'], {
    env: { ...process.env, NATS_URL: server.url, DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const r: Record<string, unknown> = {};
  let began = 0;
  const done = new Promise<void>((resolve) => {
    const end = setTimeout(() => {
      r.gaveUp = true;
      resolve();
    }, limitMs);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let j: { msg?: string; time?: number; err?: string; [k: string]: unknown };
      try {
        j = JSON.parse(line);
      } catch {
        return;
      }
      if (j.msg === 'bench: starting') began = j.time!;
      if (j.msg === 'wallet started') {
        r.startedMs = j.time! - began;
        r.rssAtStartMb = rssMb(child.pid!);
      }
      if (j.msg === 'ledger projection caught up') {
        r.caughtUpMs = j.time! - began;
        r.appliedAtStart = j.appliedSinceStart;
        r.rebuilt = j.rebuilt;
        r.rssCaughtUpMb = rssMb(child.pid!);
      }
      if (j.msg === 'bench: start failed') {
        r.failed = j.err;
        r.failedAfterMs = j.time! - began;
        clearTimeout(end);
        resolve();
      }
      // the old code has no 'caught up' line: it has caught up when it says started
      const finished = r.failed === undefined && r.startedMs !== undefined && (oldCode || r.caughtUpMs !== undefined);
      if (finished && !r.settling) {
        r.settling = true;
        clearTimeout(end);
        setTimeout(resolve, 10_000);
      }
    });
  });
  await done;
  r.rssAfter10sMb = rssMb(child.pid!);
  delete r.settling;
  child.kill('SIGKILL');
  await new Promise((res) => child.once('exit', res));
  const wd = join(dataDir, 'wallet');
  r.projectionFiles = existsSync(wd) ? readdirSync(wd).filter((f) => f.endsWith('.sqlite')).length : 0;
  r.projectionBytes = existsSync(wd) ? readdirSync(wd).reduce((s, f) => s + statSync(join(wd, f)).size, 0) : 0;
  return r;
}

/** Median µs of `n` sequential calls. */
async function median(n: number, f: (i: number) => Promise<unknown>) {
  const t: number[] = [];
  for (let i = 0; i < n; i++) {
    const a = performance.now();
    await f(i);
    t.push((performance.now() - a) * 1000);
  }
  t.sort((a, b) => a - b);
  return Math.round(t[Math.floor(n / 2)]!);
}
const directGet = (subject: string) =>
  nc.request(`$JS.API.DIRECT.GET.${STREAMS.ledger}`, JSON.stringify({ last_by_subj: subject }), { timeout: 5000 });

const dataDir = join(storeDir, `data-run-${Date.now()}`);
const first = await walletStart(dataDir);
const restart = await walletStart(dataDir);
rmSync(dataDir, { recursive: true, force: true });

// a ledger with a single wallet beside it, for the balance read's "1 wallet" figure
const one = await startNatsServer({ storeDir: join(storeRoot, 'one-wallet'), port: -1, syncInterval: '2m' });
const nc1 = await connectNats(one.url, 'bench-one');
await provision(
  nc1,
  loadConfig({ env: {}, noDefaultFile: true, overrides: { dataDir: join(storeRoot, 'one-data'), nats: { url: one.url } } }),
);
if ((await (await jetstreamManager(nc1)).streams.info(STREAMS.ledger)).state.messages === 0)
  await writeLedgerHistory(nc1, { entries: 1000, wallets: 1, prefix: 'h' });
const direct1 = (subject: string) =>
  nc1.request(`$JS.API.DIRECT.GET.${STREAMS.ledger}`, JSON.stringify({ last_by_subj: subject }), { timeout: 5000 });
const reads = 2000;
const balance = {
  oldWildcardAt1WalletUs: await median(reads, () => direct1(subjects.ledgerAll)),
  oldWildcardAtManyUs: await median(reads, () => directGet(subjects.ledgerAll)),
  ownSubjectAt1WalletUs: await median(reads, () => direct1(subjects.ledger(historyWallet('h', 0)))),
  ownSubjectAtManyUs: await median(reads, (i) => directGet(subjects.ledger(historyWallet('h', (i * 7919) % wallets)))),
  streamInfoAtManyUs: await median(200, () => jsm.streams.info(STREAMS.ledger)),
};

console.log(
  JSON.stringify(
    {
      code: oldCode ? 'before (no checkpoint)' : 'after',
      entries: info.state.messages,
      wallets: info.state.num_subjects,
      ledgerBytesPerEntry: +(info.state.bytes / info.state.messages).toFixed(0),
      ledgerDiskBytesPerEntry: +(ledgerDisk / info.state.messages).toFixed(0),
      first,
      restart,
      projectionBytesPerRow: first.projectionBytes ? +((first.projectionBytes as number) / info.state.messages).toFixed(0) : null,
      catchUpPerS: first.caughtUpMs
        ? Math.round(info.state.messages / ((first.caughtUpMs as number) / 1000))
        : first.startedMs
          ? Math.round(info.state.messages / ((first.startedMs as number) / 1000))
          : null,
      balance,
    },
    null,
    1,
  ),
);
await nc.close();
await nc1.close();
await server.stop();
await one.stop();
