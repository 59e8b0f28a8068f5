// How a store written before the archive of finished jobs (issue 26, session 27: documents of every
// finished job in the `jobs` bucket) moves to it: a job-supervisor of this code archives them at its
// sweeps. On a COPY of such a store (it is changed):
//   cp -a <store> /tmp/old && node --import tsx scripts/diagnostics/history-migrate.ts --data-dir /tmp/old [--sweep-seconds 5] [--minutes 30]
// Starts nats-server on <dir>/nats and one job-supervisor (`main.ts job-supervisor`, DATA_DIR=<dir>,
// retention.sweepSeconds from --sweep-seconds), then every 10 s prints the documents left in the
// bucket, the archive's, nats-server's RSS and the documents moved per second since the last line;
// ends when the bucket holds none or at --minutes.
import { parseArgs } from 'node:util';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { startNatsServer } from '../../shared/nats/server.ts';
import { connectNats } from '../../shared/nats/connect.ts';
import { BUCKETS, STREAMS } from '../../shared/names.ts';
import { ROOT } from '../../shared/config/index.ts';

const { values: a } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    'sweep-seconds': { type: 'string', default: '5' },
    minutes: { type: 'string', default: '30' },
  },
});
if (!a['data-dir']) {
  console.error('usage: history-migrate.ts --data-dir <copy of a store> [--sweep-seconds 5] [--minutes 30]');
  process.exit(2);
}
const dataDir = resolve(a['data-dir']);
const server = await startNatsServer({
  storeDir: join(dataDir, 'nats'),
  port: -1,
  serverName: 'payloads-embedded',
  startTimeoutMs: 600_000,
});
const nc = await connectNats(server.url, 'history-migrate');
const jsm = await jetstreamManager(nc);
const rssMb = (pid: number) => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024);
const messages = async (s: string) => (await jsm.streams.info(s).catch(() => null))?.state.messages ?? 0;
const configFile = join(dataDir, 'migrate-config.json');
writeFileSync(configFile, JSON.stringify({ retention: { sweepSeconds: Number(a['sweep-seconds']) } }));
const t0 = Date.now();
const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'main.ts'), 'job-supervisor'], {
  cwd: ROOT,
  env: { ...process.env, NATS_URL: server.url, DATA_DIR: dataDir, CONFIG_FILE: configFile, LOG_LEVEL: 'warn' },
  stdio: ['ignore', 'inherit', 'inherit'],
});
const bucket = `KV_${BUCKETS.jobs}`;
console.log(
  `start: ${await messages(bucket)} documents in the bucket, ${await messages(STREAMS.jobsArchive)} in the archive, nats-server ${rssMb(server.pid)} MB`,
);
let last = { at: Date.now(), left: await messages(bucket) };
while (Date.now() - t0 < Number(a.minutes) * 60_000 && child.exitCode === null) {
  await new Promise((r) => setTimeout(r, 10_000));
  const left = await messages(bucket);
  const now = Date.now();
  console.log(
    `${Math.round((now - t0) / 1000)} s: ${left} in the bucket, ${await messages(STREAMS.jobsArchive)} in the archive, nats-server ${rssMb(server.pid)} MB, ${Math.round((last.left - left) / ((now - last.at) / 1000))} moved/s`,
  );
  last = { at: now, left };
  if (left === 0) break;
}
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
await nc.close();
// a restart of nats-server on the migrated store: its memory without the documents' per-key index
await server.stop();
const again = await startNatsServer({
  storeDir: join(dataDir, 'nats'),
  port: -1,
  serverName: 'payloads-embedded',
  startTimeoutMs: 600_000,
});
await new Promise((r) => setTimeout(r, 10_000));
console.log(`nats-server restarted on the migrated store: ${rssMb(again.pid)} MB`);
await again.stop();
process.exit(0);
