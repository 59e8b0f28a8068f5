// A job-supervisor that comes back behind (issue 44 item 11): how long its start takes, when its
// projection has caught up, and its resident memory before, during and after the catch-up. One run,
// not a timed test:
//   node bench/supervisor-catchup.ts --jobs 20000 [--dir /tmp/catchup] [--keep]
// Steps: a nats-server on <dir>/nats (provisioned as the service does), a supervisor started once
// (its projection file and checkpoint), stopped; `scripts/history.ts --jobs N` writes N finished jobs
// (the archive of finished jobs, their ledger entries and keys) after that checkpoint; the
// supervisor started again (behind by N), then once more (caught up, the baseline). Each start:
// the time to its `ready` (main.ts reports it once start() resolved), the time until its stats say
// the tail is applied, RSS (VmRSS of the supervisor's process) every 500 ms.
import { parseArgs } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../shared/config/index.ts';
import { startNatsServer } from '../shared/nats/server.ts';
import { connectNats } from '../shared/nats/connect.ts';
import { provision } from '../shared/nats/provision.ts';
import { jobsService } from '../shared/protocol/job-supervisor.ts';
import { rssMb, runTs, spawnTs, stopAll, waitReady } from './lib/procs.ts';

const { values: a } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    dir: { type: 'string' },
    keep: { type: 'boolean', default: false },
    // how long RSS is watched after the catch-up
    after: { type: 'string', default: '20' },
  },
});
const N = Number(a.jobs);
const dir = a.dir ?? mkdtempSync(join(tmpdir(), 'payloads-catchup-'));
const config = loadConfig({ overrides: { dataDir: dir } });
const server = await startNatsServer({ storeDir: join(dir, 'nats') });
const url = server.url;
const nc = await connectNats(url, 'catchup-bench');
await provision(nc, config);
const env = { NATS_URL: url, DATA_DIR: dir, LOG_LEVEL: 'warn' };
const round = (x: number) => Math.round(x * 10) / 10;

async function startSupervisor(label: string, expectApplied: number) {
  const t0 = Date.now();
  const p = spawnTs(`supervisor-${label}`, 'main.ts', ['job-supervisor'], env);
  const samples: { s: number; rss: number }[] = [];
  const sampler = setInterval(() => samples.push({ s: (Date.now() - t0) / 1000, rss: round(rssMb(p.pid)) }), 500);
  await waitReady(p, null, 300_000);
  const readyS = (Date.now() - t0) / 1000;
  // the first answer of the list (503 while it cannot answer from a whole copy)
  let listS = NaN;
  let caughtS = NaN;
  for (;;) {
    const st = await jobsService.stats(nc, {}).catch(() => null);
    if (Number.isNaN(listS)) {
      const ok = await jobsService.list(nc, { walletId: 'w_none', limit: 1 }).then(
        () => true,
        () => false,
      );
      if (ok) listS = (Date.now() - t0) / 1000;
    }
    if (st && st.projection.complete && !st.projection.catchingUp && st.projection.appliedSinceStart >= expectApplied) {
      caughtS = (Date.now() - t0) / 1000;
      break;
    }
    await sleep(200);
  }
  const atCatchUp = round(rssMb(p.pid));
  await sleep(Number(a.after) * 1000);
  clearInterval(sampler);
  const peak = Math.max(...samples.map((x) => x.rss));
  const after = round(rssMb(p.pid));
  const r = {
    label,
    readyS: round(readyS),
    listS: round(listS),
    caughtUpS: round(caughtS),
    peakMb: peak,
    atCatchUpMb: atCatchUp,
    afterMb: after,
  };
  console.log(JSON.stringify(r));
  return { p, r };
}

try {
  const first = await startSupervisor('first (empty store)', 0);
  await first.p.stop();
  const t0 = Date.now();
  await runTs('history', 'scripts/history.ts', ['--jobs', String(N)], { NATS_URL: url }, 1_800_000);
  console.log(JSON.stringify({ filled: N, seconds: round((Date.now() - t0) / 1000) }));
  const behind = await startSupervisor(`behind by ${N}`, N);
  await behind.p.stop();
  const again = await startSupervisor('restart after the catch-up', 0);
  await again.p.stop();
} finally {
  await stopAll();
  await nc.close();
  await server.stop();
  if (!a.keep && !a.dir) rmSync(dir, { recursive: true, force: true });
}
