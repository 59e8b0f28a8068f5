// What reading a job document costs when nats-server has not loaded its message block, against one
// in a loaded block (issue 26, session 24: why `GET /v1/jobs` and `GET /v1/jobs/{id}` have a longer
// p99 on a filled store than on an empty one). Runs nats-server alone on a COPY of a store's nats
// folder (it writes to the store it opens):
//   cp -r <HISTORY_BENCH_DIR>/store-1000000-100000-3000000/nats /tmp/copy
//   node scripts/history-cold-read.ts /tmp/copy [reads=300]
// Needs a store filled before session 27 (job documents in the bucket): since then the generator
// writes history into JOBS_ARCHIVE and a new fill's bucket is empty.
// Takes job keys at random stream sequences (documents written across the whole fill), waits 15 s
// for nats-server's block cache to let go, then reads, one at a time 20 ms apart, a different random
// document each time (cold) and one of the same three documents (hot); prints p50/p90/p99 of each.
import { setTimeout as sleep } from 'node:timers/promises';
import { Kvm } from '@nats-io/kv';
import { jetstreamManager } from '@nats-io/jetstream';
import { startNatsServer } from '../shared/nats/server.ts';
import { connectNats } from '../shared/nats/connect.ts';

const dir = process.argv[2];
const reads = Number(process.argv[3] ?? 300);
if (!dir) {
  console.error("usage: node scripts/history-cold-read.ts <copy of a store's nats folder> [reads=300]");
  process.exit(2);
}
const srv = await startNatsServer({ storeDir: dir });
const nc = await connectNats(srv.url, 'history-cold-read');
try {
  const kv = await new Kvm(nc).open('jobs');
  const jsm = await jetstreamManager(nc);
  const { state } = await jsm.streams.info('KV_jobs');
  console.log(`KV_jobs: ${state.messages} documents, ${state.bytes} bytes, sequences ${state.first_seq}..${state.last_seq}`);
  const keys: string[] = [];
  // a sequence whose document was written again later is gone: drawn again, within a bound
  for (let tries = 0; keys.length < reads + 3; tries++) {
    if (tries > 20 * (reads + 3)) throw new Error(`found only ${keys.length} documents at random sequences`);
    const seq = state.first_seq + Math.floor(Math.random() * (state.last_seq - state.first_seq + 1));
    const m = await jsm.streams.getMessage('KV_jobs', { seq }).catch(() => null);
    if (m) keys.push(m.subject.slice('$KV.jobs.'.length));
  }
  await sleep(15000);
  const time = async (k: string) => {
    const t0 = performance.now();
    await kv.get(k);
    return performance.now() - t0;
  };
  const hotKeys = keys.slice(0, 3);
  for (const k of hotKeys) await kv.get(k);
  const cold: number[] = [];
  const hot: number[] = [];
  for (let i = 0; i < reads; i++) {
    cold.push(await time(keys[3 + i]!));
    hot.push(await time(hotKeys[i % 3]!));
    await sleep(20);
  }
  const pct = (a: number[], p: number) => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(a.length * p))]!.toFixed(2);
  const line = (a: number[]) => `p50 ${pct(a, 0.5)} / p90 ${pct(a, 0.9)} / p99 ${pct(a, 0.99)} ms`;
  console.log(`a document in a block not loaded (${reads} different ones): ${line(cold)}`);
  console.log(`a document in a loaded block (the same three):       ${line(hot)}`);
} finally {
  await nc.close().catch(() => {});
  await srv.stop();
}
process.exit(0);
