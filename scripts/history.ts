// Fill a store with synthetic history in the project's own record formats, fast, to measure what
// history costs (issue 26):
//   node --import tsx scripts/history.ts --jobs 1000000 --wallets 100000 --entries 3000000 --data-dir /tmp/h1m
//   NATS_URL=nats://127.0.0.1:4222 node --import tsx scripts/history.ts --jobs 100000
//   NATS_URL=<a cluster's URLs> NATS_REPLICAS=3 node scripts/history.ts ... --keys-file <file>  (an R3 cluster's streams)
// With --data-dir it starts the embedded nats-server on <dir>/nats (as main.ts does with DATA_DIR=<dir>)
// with sync_interval 2m for the fill only, and stops it cleanly; then `DATA_DIR=<dir> npm start`
// starts the service on that history. Without it, NATS_URL (or the data folder's nats.url) names the server.
// Written: `keys` (one key per wallet), the archive of finished jobs (JOBS_ARCHIVE: websitepro jobs,
// 4 results each, created over --days days before yesterday, results expired and purged, where the
// supervisor moves such a job's document: shared/jobs/archive.ts),
// LEDGER (per wallet a grant, then per job its charge and the refunds of its failed results, with
// the balanceAfter chain the wallet keeps). Top-ups are not written (a grant credits instead).
//
// How it is fast (session 17: 1,400 -> see docs/notes/issue-26.md): --parts processes (default:
// one per core, at most 4), each with its own connection, writing the wallets w with w % parts = k
// and their jobs, so each wallet's chain stays in one connection's order; and only every
// --ack-every-th message of a stream is a JetStream publish awaiting its ack (a window of --window
// such acks in flight), the others are plain publishes to the stream's subject: the server stores
// a connection's messages to one stream in order, so an ack covers every message before it on that
// stream, and bounds what is in flight. At the end the parent checks that every stream holds what
// was written (a plain publish the server refused would be missing there). --ack-every 1 is the
// old way (every message acknowledged).
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { loadConfig } from '../shared/config/index.ts';
import { startNatsServer } from '../shared/nats/server.ts';
import { connectNats } from '../shared/nats/connect.ts';
import { provision } from '../shared/nats/provision.ts';
import { resolveNatsUrl } from '../shared/runtime.ts';
import { BUCKETS, STREAMS, subjects, OBJECT_STORES } from '../shared/names.ts';
import { hashKey, newApiKey } from '../shared/ids.ts';
import { ledgerRef, type LedgerMessage } from '../shared/protocol/wallet.ts';
import type { JobRecord, ResultRecord } from '../shared/protocol/jobs.ts';
import type { KeyRecord } from '../shared/keys.ts';

const { values: a } = parseArgs({
  options: {
    jobs: { type: 'string', default: '100000' },
    wallets: { type: 'string' },
    entries: { type: 'string' },
    days: { type: 'string', default: '20' },
    'data-dir': { type: 'string' },
    // where the five sample keys go (default with --data-dir: <dir>/history-keys.json)
    'keys-file': { type: 'string' },
    parts: { type: 'string', default: String(Math.min(4, Math.max(1, availableParallelism()))) },
    'ack-every': { type: 'string', default: '200' },
    window: { type: 'string' },
    // a part's own options, set by the parent
    part: { type: 'string' },
    url: { type: 'string' },
    now: { type: 'string' },
  },
});
const N = Number(a.jobs);
const W = Number(a.wallets ?? Math.max(1, Math.round(N / 10)));
const E = Number(a.entries ?? Math.round(W + N * 1.2));
const DAYS = Number(a.days);
const PARTS = Math.max(1, Math.min(Number(a.parts), W));
const ACK_EVERY = Math.max(1, Number(a['ack-every']));
// messages in flight unconfirmed: about 4,000 whatever the ack spacing
const WINDOW = Number(a.window ?? Math.max(4, Math.ceil(4000 / ACK_EVERY)));
const OUTPUTS = ['markdown', 'html', 'text', 'pdf'] as const;
const PRICE = 10;
if (!(N >= 0 && W >= 1 && E >= W + N && E <= W + N * 4)) {
  console.error(
    `need jobs >= 0, wallets >= 1 and wallets + jobs <= entries <= wallets + 4 x jobs (each job refunds at most 3 of its 4 results); got ${N}, ${W}, ${E}`,
  );
  process.exit(2);
}
const config = loadConfig(a['data-dir'] ? { overrides: { dataDir: a['data-dir'] } } : {});

interface PartResult {
  published: number;
  entries: number;
  keys: number;
  jobs: number;
  sample: { key: string; walletId: string }[];
}

if (a.part !== undefined) {
  process.stdout.write(JSON.stringify(await writePart(Number(a.part), a.url!, Number(a.now))) + '\n');
  process.exit(0);
} else {
  await fill();
  // a parent's IPC channel (bench/lib/procs.ts spawns with one) must not keep a finished fill waiting
  process.exit(process.exitCode ?? 0);
}

/** Part k of PARTS: wallets w with w % PARTS = k, their keys, grants and jobs. */
async function writePart(k: number, url: string, now: number): Promise<PartResult> {
  const nc = await connectNats(url, `history-${k}`);
  const js = jetstream(nc, { timeout: 60_000 });
  // acknowledged publishes in flight: one waiter woken per acknowledgement
  let inFlight = 0;
  let published = 0;
  let room: (() => void) | null = null;
  const perStream: Record<string, number> = {};
  const pub = async (stream: string, subject: string, data: string) => {
    published++;
    const n = (perStream[stream] = (perStream[stream] ?? 0) + 1);
    if (n % ACK_EVERY !== 0) {
      nc.publish(subject, data);
      return;
    }
    while (inFlight >= WINDOW) await new Promise<void>((r) => (room = r));
    inFlight++;
    js.publish(subject, data).then(
      () => {
        inFlight--;
        const r = room;
        room = null;
        r?.();
      },
      (e) => {
        console.error(e);
        process.exit(1);
      },
    );
  };
  const idAt = (prefix: string, at: number) => `${prefix}_${at.toString(36).padStart(9, '0')}${randomBytes(8).toString('hex')}`;

  const t0 = Date.now();
  const start = now - (DAYS + 1) * 86400_000;
  const span = DAYS * 86400_000;
  // this part's wallets and their keys; one grant each, enough for every job it will be charged
  const wallets = new Map<number, string>();
  const balance = new Map<number, number>();
  const perWallet = Math.ceil(N / W) * OUTPUTS.length * PRICE;
  const sample: PartResult['sample'] = [];
  let keys = 0;
  for (let i = k; i < W; i += PARTS) {
    const walletId = idAt('w', start - W + i);
    wallets.set(i, walletId);
    const key = newApiKey();
    if (sample.length < 5) sample.push({ key, walletId });
    await pub(
      `KV_${BUCKETS.keys}`,
      `$KV.${BUCKETS.keys}.${hashKey(key)}`,
      JSON.stringify({ walletId, createdAt: start, via: 'admin' } satisfies KeyRecord),
    );
    keys++;
    balance.set(i, perWallet);
    const grant: LedgerMessage = {
      v: 1,
      type: 'grant',
      amount: perWallet,
      balanceAfter: perWallet,
      at: start,
      ref: ledgerRef.grant(idAt('g', start)),
      reason: 'history',
    };
    await pub(STREAMS.ledger, subjects.ledger(walletId), JSON.stringify(grant));
  }
  // refunds spread over the jobs: E - W - N in all, at most 3 per job
  const refunds = E - W - N;
  let entries = keys;
  let jobs = 0;
  for (let j = 0; j < N; j++) {
    const w = j % W;
    if (w % PARTS !== k) continue;
    const walletId = wallets.get(w)!;
    const createdAt = start + Math.floor((j / Math.max(1, N)) * span);
    const id = idAt('job', createdAt);
    const nRefunds = Math.floor(((j + 1) * refunds) / N) - Math.floor((j * refunds) / N);
    const results: ResultRecord[] = OUTPUTS.map((key, r) => {
      const failed = r >= OUTPUTS.length - nRefunds;
      return {
        key,
        price: PRICE,
        refunded: failed,
        subject: subjects.taskWebsitepro,
        params: { url: `https://example.com/page/${j}`, output: key },
        taskSeq: j * 4 + r + 1,
        ...(failed
          ? { status: 'failed' as const, error: 'unreachable', message: 'the page did not answer' }
          : {
              status: 'done' as const,
              file: {
                store: OBJECT_STORES.results,
                name: `${id}/${key}`,
                contentType: 'text/plain',
                bytes: 4000,
                filename: `page-${j}.${key === 'markdown' ? 'md' : key}`,
              },
            }),
      };
    });
    const cost = OUTPUTS.length * PRICE;
    const job: JobRecord = {
      id,
      service: 'websitepro',
      status: 'completed',
      walletId,
      target: `https://example.com/page/${j}`,
      request: { url: `https://example.com/page/${j}`, outputs: [...OUTPUTS] },
      cost,
      refunded: nRefunds * PRICE,
      createdAt,
      startedAt: createdAt + 50,
      finishedAt: createdAt + 3000,
      expiresAt: createdAt + config.retention.websitepro * 1000,
      purgedAt: createdAt + config.retention.websitepro * 1000 + 30_000,
      results,
      baseUrl: 'http://localhost:8080',
    };
    let b = balance.get(w)! - cost;
    const charge: LedgerMessage = {
      v: 1,
      type: 'charge',
      amount: -cost,
      balanceAfter: b,
      at: createdAt,
      ref: ledgerRef.charge(id),
      jobId: id,
    };
    await pub(STREAMS.ledger, subjects.ledger(walletId), JSON.stringify(charge));
    entries++;
    for (const r of results) {
      if (!r.refunded) continue;
      b += r.price;
      const refund: LedgerMessage = {
        v: 1,
        type: 'refund',
        amount: r.price,
        balanceAfter: b,
        at: createdAt + 3000,
        ref: ledgerRef.refund(id, r.key),
        jobId: id,
        resultKey: r.key,
      };
      await pub(STREAMS.ledger, subjects.ledger(walletId), JSON.stringify(refund));
      entries++;
    }
    balance.set(w, b);
    // archived as the supervisor leaves it; never in the bucket (revision 0: no revision header)
    await pub(STREAMS.jobsArchive, subjects.jobArchived, JSON.stringify(job));
    jobs++;
    if (jobs % 100_000 === 0)
      console.error(`part ${k}: ${jobs} jobs, ${entries} ledger entries, ${Math.round((Date.now() - t0) / 1000)} s`);
  }
  while (inFlight > 0) await new Promise<void>((r) => (room = r));
  await nc.flush();
  await nc.drain();
  return { published, entries, keys, jobs, sample };
}

/** The parent: provision, run the parts side by side, check that every stream holds what they wrote. */
async function fill() {
  const server = a['data-dir']
    ? await startNatsServer({ storeDir: join(config.dataDir, 'nats'), port: -1, serverName: 'payloads-embedded', syncInterval: '2m' })
    : null;
  const url = server?.url ?? resolveNatsUrl(config);
  const nc = await connectNats(url, 'history');
  await provision(nc, config);
  const jsm = await jetstreamManager(nc);
  const streams = [STREAMS.ledger, STREAMS.jobsArchive, `KV_${BUCKETS.keys}`];
  const count = async () =>
    Object.fromEntries(await Promise.all(streams.map(async (s) => [s, (await jsm.streams.info(s)).state.messages] as const)));
  const before = await count();

  const t0 = Date.now();
  const now = Date.now();
  const args = process.argv
    .slice(2)
    .filter((x, i, all) => !['--part', '--url', '--now'].includes(x) && !['--part', '--url', '--now'].includes(all[i - 1]!));
  const results = await Promise.all(
    Array.from(
      { length: PARTS },
      (_, k) =>
        new Promise<PartResult>((resolve, reject) => {
          const child = spawn(
            process.execPath,
            [...process.execArgv, process.argv[1]!, ...args, '--part', String(k), '--url', url, '--now', String(now)],
            { stdio: ['ignore', 'pipe', 'inherit'] },
          );
          let last = '';
          createInterface({ input: child.stdout! }).on('line', (l) => {
            last = l;
          });
          child.once('exit', (code) =>
            code === 0 ? resolve(JSON.parse(last) as PartResult) : reject(new Error(`part ${k} exited with ${code}`)),
          );
        }),
    ),
  );
  const published = results.reduce((s, r) => s + r.published, 0);
  const want = { [STREAMS.ledger]: results.reduce((s, r) => s + r.entries, 0), [STREAMS.jobsArchive]: N, [`KV_${BUCKETS.keys}`]: W };
  // the plain publishes after a stream's last ack are stored shortly after: wait for them, then judge
  let after = await count();
  for (let i = 0; i < 600 && streams.some((s) => after[s]! - before[s]! < want[s]!); i++) {
    await new Promise((r) => setTimeout(r, 100));
    after = await count();
  }
  const s = (Date.now() - t0) / 1000;
  const missing = streams.filter((x) => after[x]! - before[x]! !== want[x]!);
  console.log(
    `wrote ${W} wallets (keys), ${N} jobs, ${want[STREAMS.ledger]} ledger entries (${published} messages) in ${s.toFixed(1)} s: ${Math.round(published / s)} messages/s (${PARTS} parts, an ack every ${ACK_EVERY} messages per stream)`,
  );
  if (missing.length) {
    console.error(
      `the store does not hold what was written: ${missing.map((x) => `${x} ${after[x]! - before[x]!} of ${want[x]}`).join(', ')}`,
    );
    process.exitCode = 1;
  }
  const keysFile = a['keys-file'] ?? (a['data-dir'] ? join(config.dataDir, 'history-keys.json') : undefined);
  if (keysFile && !process.exitCode) {
    mkdirSync(dirname(keysFile), { recursive: true });
    writeFileSync(keysFile, JSON.stringify(results.flatMap((r) => r.sample).slice(0, 5), null, 2));
    console.log(`sample keys in ${keysFile}`);
  }
  await nc.drain();
  await server?.stop();
}
