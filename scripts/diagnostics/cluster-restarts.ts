// Restarts the 3-node NATS cluster of `npm run cluster` (scripts/cluster-lib.ts) on one store N times
// and times what an operator's restart waits for (issue 26, session 24): the system (wallet and
// job-supervisor processes) is started and stopped as the launcher does it (System.stop drops the
// ephemeral consumers); then, each round, the nodes alone are started on the same store, and the
// script reports how long after the cluster said ready its durable consumers are listed again (a
// restarted test cluster once listed none for 60-180 s, session 23), before the system is started
// again; and how long after that it places a 3-replica stream (a restarted system once could not
// for 60 s), printing every node's /jsz meta group while it cannot. A round whose durables or
// placement take over 5 s prints the tail of each node's log.
//   node scripts/diagnostics/cluster-restarts.ts [N=6] [dataDir]
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import { startSystem, freePort, startNatsCluster, waitForPlacement } from '../cluster-lib.ts';
import { connectNats } from '../../shared/nats/connect.ts';

const n = Number(process.argv[2] ?? 6);
const dataDir = process.argv[3] ?? mkdtempSync(join(tmpdir(), 'payloads-restarts-'));
const clientPorts = await Promise.all([0, 1, 2].map(freePort));
const clusterPorts = await Promise.all([0, 1, 2].map(freePort));
const config = { outbound: { allowCidrs: ['127.0.0.0/8'] } };

/** Every consumer of every stream: `STREAM/durable`, or `STREAM/(ephemeral)name`. */
async function consumers(url: string): Promise<string[]> {
  const nc = await connectNats(url, 'cluster-restarts');
  try {
    const jsm = await jetstreamManager(nc, { timeout: 3000 });
    const out: string[] = [];
    for await (const s of jsm.streams.names()) {
      for await (const c of jsm.consumers.list(s)) out.push(`${s}/${c.config.durable_name ?? `(ephemeral)${c.name}`}`);
    }
    return out;
  } finally {
    await nc.close().catch(() => {});
  }
}

let durables: string[] = [];
let slow = 0;
for (let i = 0; i <= n; i++) {
  if (i > 0) {
    const t0 = Date.now();
    const cluster = await startNatsCluster({ dataDir, clientPorts, clusterPorts });
    const ready = Date.now() - t0;
    let listedAfter = -1;
    let last: string[] = [];
    const t1 = Date.now();
    while (Date.now() - t1 < 240000) {
      last = await consumers(cluster.url).catch((e: Error) => [`error: ${e.message}`]);
      if (durables.every((d) => last.includes(d))) {
        listedAfter = Date.now() - t1;
        break;
      }
      await sleep(500);
    }
    // and whether it places a 3-replica stream (what a restarted system's first actor does), with every
    // node's view of the meta group (/jsz) while it cannot
    const t3 = Date.now();
    const failed = await waitForPlacement(
      cluster.url,
      3,
      90000,
      cluster.nodes.map((nd) => nd.handle!.monitorUrl!),
    ).then(
      () => '',
      (e: Error) => e.message,
    );
    const placedAfter = failed ? -1 : Date.now() - t3;
    console.log(
      `restart ${i}/${n}: cluster ready in ${ready} ms; its ${durables.length} durables listed ${listedAfter >= 0 ? `${listedAfter} ms` : 'NOT within 240 s'} after (${last.length} consumers listed); an R3 stream placed ${placedAfter >= 0 ? `${placedAfter} ms` : 'NOT within 90 s'} after that`,
    );
    if (failed) console.log(`  ${failed}`);
    if (listedAfter < 0 || listedAfter > 5000 || placedAfter < 0 || placedAfter > 5000) {
      slow++;
      for (const node of cluster.nodes)
        console.log(`--- ${node.name}\n${readFileSync(join(node.storeDir, 'nats-server.log'), 'utf8').split('\n').slice(-40).join('\n')}`);
    }
    await cluster.stop();
  }
  const t2 = Date.now();
  const sys = await startSystem({
    dataDir,
    clientPorts,
    clusterPorts,
    processes: ['wallet', 'job-supervisor'],
    config,
    logLevel: 'warn',
    readyTimeoutMs: 120000,
  });
  const up = Date.now() - t2;
  const list = await consumers(sys.cluster.url);
  if (i === 0) durables = list.filter((x) => !x.includes('(ephemeral)'));
  console.log(
    `round ${i}: system up in ${up} ms; ${list.filter((x) => !x.includes('(ephemeral)')).length} durables, ${list.filter((x) => x.includes('(ephemeral)')).length} ephemeral consumers`,
  );
  await sys.stop();
}
console.log(`${n - slow} of ${n} restarts listed every durable and placed within 5 s; store: ${dataDir}`);
process.exit(slow ? 1 : 0);
