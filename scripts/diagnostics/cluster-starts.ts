// Starts the 3-node NATS cluster of `npm run cluster` (scripts/cluster-lib.ts, free ports, fresh
// stores) N times in a row and, the moment each start reports the cluster formed, asks it to place
// what the first actor places: a 3-replica stream (one try, no retry), then every stream, bucket and
// store of shared/nats/provision.ts with 3 replicas (one try). A start that reports ready while the
// JetStream meta group cannot place an R3 stream yet ("no suitable peers for placement": the wallet
// of `npm run cluster` retried that for 60 s and exited) fails here at once. Exit 1 on any failure.
//   node --import tsx scripts/diagnostics/cluster-starts.ts [N=20]      STARTS_SYSTEM=1: also spawn wallet + supervisor
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager, StorageType } from '@nats-io/jetstream';
import { startNatsCluster, spawnActor, stopEverything } from '../cluster-lib.ts';
import { connectNats } from '../../shared/nats/connect.ts';
import { provision } from '../../shared/nats/provision.ts';
import { loadConfig } from '../../shared/config/index.ts';

const n = Number(process.argv[2] ?? 20);
const withSystem = process.env.STARTS_SYSTEM === '1';
const failures: string[] = [];
const times: number[] = [];
let reformed = 0;
for (let i = 1; i <= n; i++) {
  const dataDir = mkdtempSync(join(tmpdir(), 'payloads-starts-'));
  const t0 = Date.now();
  let step = 'start';
  try {
    const cluster = await startNatsCluster({ dataDir });
    const ready = Date.now() - t0;
    // a start formed again from scratch (a meta group without a node) leaves its first try's folder beside
    const again = readdirSync(dataDir).filter((d) => /^cluster-\d+$/.test(d)).length;
    if (again) reformed++;
    const nc = await connectNats(cluster.url, 'cluster-starts');
    try {
      step = 'an R3 stream at once';
      const jsm = await jetstreamManager(nc, { timeout: 10000 });
      try {
        await jsm.streams.add({ name: 'STARTS_PROBE', subjects: ['starts.probe'], storage: StorageType.File, num_replicas: 3 });
      } catch (e) {
        // how long the cluster stays unable to place it (what a retrying actor would see)
        const t1 = Date.now();
        let placed = false;
        while (!placed && Date.now() - t1 < 60000) {
          await new Promise((r) => setTimeout(r, 250));
          placed = await jsm.streams
            .add({ name: 'STARTS_PROBE', subjects: ['starts.probe'], storage: StorageType.File, num_replicas: 3 })
            .then(
              () => true,
              () => false,
            );
        }
        throw new Error(`${(e as Error).message} (${placed ? `placed ${Date.now() - t1} ms later` : 'still not placed 60 s later'})`);
      }
      step = 'provision with 3 replicas';
      const cfg = loadConfig({ env: {}, noDefaultFile: true, overrides: { dataDir, nats: { url: cluster.url, replicas: 3 } } });
      await provision(nc, cfg);
      if (withSystem) {
        step = 'wallet and job-supervisor processes';
        for (const p of ['wallet', 'job-supervisor'] as const)
          await spawnActor(p, { natsUrl: cluster.url, dataDir, replicas: 3, readyTimeoutMs: 60000 });
      }
      times.push(ready);
      console.log(
        `start ${i}/${n}: ready in ${ready} ms${again ? ` (formed again ${again} time${again > 1 ? 's' : ''})` : ''}, R3 placement and provisioning at once: ok (${Date.now() - t0} ms in all)`,
      );
    } finally {
      await nc.close().catch(() => {});
      await stopEverything(10000, 2000);
      await cluster.stop();
    }
  } catch (e) {
    const msg = `start ${i}/${n}: ${step} failed after ${Date.now() - t0} ms: ${String((e as Error).message ?? e).split('\n')[0]}`;
    if (process.env.STARTS_VERBOSE) console.log(String((e as Error).message));
    failures.push(msg);
    console.log(msg);
    await stopEverything(10000, 2000).catch(() => {});
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
const sorted = [...times].sort((a, b) => a - b);
console.log(
  `${n - failures.length} of ${n} starts placed R3 at once (${reformed} formed again from scratch first); ready in ${sorted[0]}..${sorted.at(-1)} ms (median ${sorted[Math.floor(sorted.length / 2)]})`,
);
if (failures.length) {
  for (const f of failures) console.log(`  ${f}`);
  process.exit(1);
}
process.exit(0);
