// Fill a store with synthetic history in the project's own record formats, fast (async publish
// windows), to measure what history costs (issue 26):
//   node --import tsx scripts/history.ts --jobs 1000000 --wallets 100000 --entries 3000000 --data-dir /tmp/h1m
//   NATS_URL=nats://127.0.0.1:4222 node --import tsx scripts/history.ts --jobs 100000
// With --data-dir it starts the embedded nats-server on <dir>/nats (as main.ts does with DATA_DIR=<dir>)
// with sync_interval 2m for the fill only, and stops it cleanly; then `DATA_DIR=<dir> npm start`
// starts the service on that history. Without it, NATS_URL (or the data folder's nats.url) names the server.
// Written: `keys` (one key per wallet), `jobs` (finished websitepro jobs, 4 results each, created
// over --days days before yesterday, results expired and purged as the supervisor leaves them),
// LEDGER (per wallet a grant, then per job its charge and the refunds of its failed results, with
// the balanceAfter chain the wallet keeps). Top-ups are not written (a grant credits instead).
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { mkdirSync, writeFileSync } from 'node:fs';
import { jetstream, type PubAck } from '@nats-io/jetstream';
import { loadConfig } from '../shared/config/index.ts';
import { startNatsServer } from '../shared/nats/server.ts';
import { connectNats } from '../shared/nats/connect.ts';
import { provision } from '../shared/nats/provision.ts';
import { resolveNatsUrl } from '../shared/runtime.ts';
import { BUCKETS, subjects, OBJECT_STORES } from '../shared/names.ts';
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
    window: { type: 'string', default: '4000' },
  },
});
const N = Number(a.jobs);
const W = Number(a.wallets ?? Math.max(1, Math.round(N / 10)));
const E = Number(a.entries ?? Math.round(W + N * 1.2));
const DAYS = Number(a.days);
const WINDOW = Number(a.window);
const OUTPUTS = ['markdown', 'html', 'text', 'pdf'] as const;
const PRICE = 10;
if (!(N >= 0 && W >= 1 && E >= W + N && E <= W + N * 4)) {
  console.error(`need jobs >= 0, wallets >= 1 and wallets + jobs <= entries <= wallets + 4 x jobs (each job refunds at most 3 of its 4 results); got ${N}, ${W}, ${E}`);
  process.exit(2);
}

const config = loadConfig(a['data-dir'] ? { overrides: { dataDir: a['data-dir'] } } : {});
const server = a['data-dir']
  ? await startNatsServer({ storeDir: join(config.dataDir, 'nats'), port: -1, serverName: 'payloads-embedded', syncInterval: '2m' })
  : null;
const nc = await connectNats(server?.url ?? resolveNatsUrl(config), 'history');
await provision(nc, config);
const js = jetstream(nc, { timeout: 60_000 });

// a window of publishes in flight: one waiter woken per acknowledgement (a race over the whole
// window per publish would cost O(window) each)
let inFlight = 0;
let published = 0;
let room: (() => void) | null = null;
async function pub(subject: string, data: string) {
  while (inFlight >= WINDOW) await new Promise<void>((r) => (room = r));
  inFlight++;
  js.publish(subject, data).then((_: PubAck) => {
    inFlight--;
    published++;
    const r = room;
    room = null;
    r?.();
  }, (e) => { console.error(e); process.exit(1); });
}
async function drained() {
  while (inFlight > 0) await new Promise<void>((r) => (room = r));
}
const idAt = (prefix: string, at: number) => `${prefix}_${at.toString(36).padStart(9, '0')}${randomBytes(8).toString('hex')}`;

const t0 = Date.now();
const now = Date.now();
const start = now - (DAYS + 1) * 86400_000;
const span = DAYS * 86400_000;
// wallets and their keys; one grant each, enough for every job it will be charged
const wallets = Array.from({ length: W }, (_, i) => idAt('w', start - W + i));
const balance = new Float64Array(W);
const perWallet = Math.ceil(N / W) * OUTPUTS.length * PRICE;
const sample: { key: string; walletId: string }[] = [];
for (let i = 0; i < W; i++) {
  const key = newApiKey();
  if (i < 5) sample.push({ key, walletId: wallets[i]! });
  await pub(`$KV.${BUCKETS.keys}.${hashKey(key)}`, JSON.stringify({ walletId: wallets[i]!, createdAt: start, via: 'admin' } satisfies KeyRecord));
  balance[i] = perWallet;
  const grant: LedgerMessage = { v: 1, type: 'grant', amount: perWallet, balanceAfter: perWallet, at: start, ref: ledgerRef.grant(idAt('g', start)), reason: 'history' };
  await pub(subjects.ledger(wallets[i]!), JSON.stringify(grant));
}
// refunds spread over the jobs: E - W - N in all, at most 3 per job
const refunds = E - W - N;
let entries = W;
for (let j = 0; j < N; j++) {
  const w = j % W;
  const walletId = wallets[w]!;
  const createdAt = start + Math.floor((j / Math.max(1, N)) * span);
  const id = idAt('job', createdAt);
  const nRefunds = Math.floor(((j + 1) * refunds) / N) - Math.floor((j * refunds) / N);
  const results: ResultRecord[] = OUTPUTS.map((key, k) => {
    const failed = k >= OUTPUTS.length - nRefunds;
    return {
      key, price: PRICE, refunded: failed, subject: subjects.taskWebsitepro, params: { url: `https://example.com/page/${j}`, output: key }, taskSeq: j * 4 + k + 1,
      ...(failed
        ? { status: 'failed' as const, error: 'unreachable', message: 'the page did not answer' }
        : { status: 'done' as const, file: { store: OBJECT_STORES.results, name: `${id}/${key}`, contentType: 'text/plain', bytes: 4000, filename: `page-${j}.${key === 'markdown' ? 'md' : key}` } }),
    };
  });
  const cost = OUTPUTS.length * PRICE;
  const job: JobRecord = {
    id, service: 'websitepro', status: 'completed', walletId, target: `https://example.com/page/${j}`,
    request: { url: `https://example.com/page/${j}`, outputs: [...OUTPUTS] }, cost, refunded: nRefunds * PRICE,
    createdAt, startedAt: createdAt + 50, finishedAt: createdAt + 3000, expiresAt: createdAt + config.retention.websitepro * 1000,
    purgedAt: createdAt + config.retention.websitepro * 1000 + 30_000, results, baseUrl: 'http://localhost:8080',
  };
  balance[w]! -= cost;
  const charge: LedgerMessage = { v: 1, type: 'charge', amount: -cost, balanceAfter: balance[w]!, at: createdAt, ref: ledgerRef.charge(id), jobId: id };
  await pub(subjects.ledger(walletId), JSON.stringify(charge));
  entries++;
  for (const r of results) {
    if (!r.refunded) continue;
    balance[w]! += r.price;
    const refund: LedgerMessage = { v: 1, type: 'refund', amount: r.price, balanceAfter: balance[w]!, at: createdAt + 3000, ref: ledgerRef.refund(id, r.key), jobId: id, resultKey: r.key };
    await pub(subjects.ledger(walletId), JSON.stringify(refund));
    entries++;
  }
  await pub(`$KV.${BUCKETS.jobs}.${id}`, JSON.stringify(job));
  if (j % 100_000 === 99_999) console.log(`${j + 1} jobs, ${entries} ledger entries, ${Math.round((Date.now() - t0) / 1000)} s`);
}
await drained();
const s = (Date.now() - t0) / 1000;
console.log(`wrote ${W} wallets (keys), ${N} jobs, ${entries} ledger entries (${published} messages) in ${s.toFixed(1)} s: ${Math.round(published / s)} messages/s`);
if (a['data-dir']) {
  mkdirSync(config.dataDir, { recursive: true });
  writeFileSync(join(config.dataDir, 'history-keys.json'), JSON.stringify(sample, null, 2));
  console.log(`sample keys in ${join(config.dataDir, 'history-keys.json')}`);
}
await nc.drain();
await server?.stop();
