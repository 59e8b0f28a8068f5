// Is nats-server itself slower on a store with history (issue 26)? Starts one nats-server on a COPY
// of a filled store's nats folder (it writes to it) and one on an empty store whose KV_jobs stream
// has the filled one's configuration, then reads one hot key of `jobs` on each, alternately, every
// 20 ms for `minutes` (a put every 25 rounds), and prints p50/p99/p99.9/max and the reads over 5 ms:
//   cp -a <store>/nats /tmp/natscopy && node --import tsx scripts/history-nats-latency.ts /tmp/natscopy [minutes]
// Needs a store filled before session 27 (job documents in the bucket): since then the generator
// writes history into JOBS_ARCHIVE and a new fill's bucket is empty.
import { Kvm } from '@nats-io/kv';
import { jetstreamManager } from '@nats-io/jetstream';
import { startNatsServer } from '../shared/nats/server.ts';
import { connectNats } from '../shared/nats/connect.ts';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const [storeNats, minutes = '4'] = process.argv.slice(2);
const servers: Record<string, any> = {
  filled: await startNatsServer({ storeDir: storeNats!, port: -1, serverName: 'payloads-embedded' }),
  empty: await startNatsServer({ storeDir: mkdtempSync(join(tmpdir(), 'stall-')), port: -1 }),
};
const kvs: Record<string, any> = {};
let cfg: any;
for (const k of ['filled', 'empty']) {
  const s = servers[k];
  const nc = await connectNats(s.url, `stalls-${k}`);
  const jsm = await jetstreamManager(nc);
  if (k === 'filled') cfg = (await jsm.streams.info('KV_jobs')).config;
  else await jsm.streams.add({ ...cfg });
  kvs[k] = await new Kvm(nc).open('jobs');
  await kvs[k].put('probe', JSON.stringify({ x: 'y'.repeat(1500) }));
}
const t0 = Date.now();
const lat: Record<string, number[]> = { filled: [], empty: [] };
const spikes: Record<string, string[]> = { filled: [], empty: [] };
let i = 0;
while (Date.now() - t0 < Number(minutes) * 60_000) {
  for (const k of i % 2 ? ['filled', 'empty'] : ['empty', 'filled']) {
    const a = performance.now();
    await kvs[k].get('probe');
    const ms = performance.now() - a;
    lat[k]!.push(ms);
    if (ms > 5) spikes[k]!.push(`${((Date.now() - t0) / 1000).toFixed(1)}s:${ms.toFixed(1)}`);
    if (i % 25 === 0) await kvs[k].put(`w${i % 1000}`, JSON.stringify({ i, pad: 'p'.repeat(1500) }));
  }
  i++;
  await new Promise((r) => setTimeout(r, 20));
}
for (const k of ['empty', 'filled']) {
  const xs = lat[k]!.sort((a, b) => a - b);
  const p = (q: number) => xs[Math.floor(((xs.length - 1) * q) / 100)]!.toFixed(2);
  console.log(
    `${k}: n ${xs.length} p50 ${p(50)} p99 ${p(99)} p99.9 ${p(99.9)} max ${xs.at(-1)!.toFixed(1)} ms; spikes >5 ms: ${spikes[k]!.length}: ${spikes[k]!.slice(0, 40).join(' ')}`,
  );
}
await servers.filled.stop();
await servers.empty.destroy();
process.exit(0);
