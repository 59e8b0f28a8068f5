// `npm run cluster`: the distributed system on one machine. Three nats-server nodes in a cluster
// (client ports 4222-4224, routes on 6222-6224, the ports of config/cluster/), every stream, bucket
// and store with 3 replicas, and every actor in its own process (two browser-pools). Ctrl-C stops
// everything, children included. See docs/cluster.md.
//   CLUSTER_PROCESSES=wallet,job-supervisor,gateway  start only these (default: all)
//   CLUSTER_RANDOM_PORTS=1                            free ports instead of 4222-4224 / 6222-6224
//   CLUSTER_READY_TIMEOUT_MS=300000                   how long each process may take to be ready (default 60 s;
//                                                     a browser-pool launching Firefox on a loaded machine can take longer)
import { join } from 'node:path';
import {
  startSystem,
  stopEverything,
  ALL_PROCESSES,
  DEFAULT_CLIENT_PORTS,
  DEFAULT_CLUSTER_PORTS,
  type ProcessName,
  type System,
} from './cluster-lib.ts';
import { loadConfigOrExit } from '../shared/runtime.ts';

const config = loadConfigOrExit();
const processes = process.env.CLUSTER_PROCESSES
  ? (process.env.CLUSTER_PROCESSES.split(',')
      .map((s) => s.trim())
      .filter(Boolean) as ProcessName[])
  : ALL_PROCESSES;
const randomPorts = process.env.CLUSTER_RANDOM_PORTS === '1';
const readyTimeoutMs = Number(process.env.CLUSTER_READY_TIMEOUT_MS) || undefined;

/** An actor's stop, before SIGKILL (each bounds its own to 9 s). */
const ACTOR_STOP_GRACE_MS = 9500;
/** A NATS node's stop, before SIGKILL: time to write its streams' state. */
const NODE_STOP_GRACE_MS = 15_000;
const HARD_STOP_MS = ACTOR_STOP_GRACE_MS + NODE_STOP_GRACE_MS + 2500;

let sys: System | undefined;
let stopping = false;
const stop = async (code: number) => {
  if (stopping) return;
  stopping = true;
  console.log('\nstopping every process, then the three NATS nodes...');
  // Every child runs in its own process group, so a terminal's Ctrl-C or a SIGTERM to the group
  // reached only this launcher: actors stop first (each bounds its own stop to 9 s), then the
  // nodes; what a start interrupted by Ctrl-C had launched is included. A node writes its streams'
  // state as it stops: killed first (the grace was 2 s), the next start rebuilds that state from
  // the blocks (a 1 M store: 83 s to ready instead of 45 s), a restart that then ran into the
  // actors' start bounds was killed in turn. NODE_STOP_GRACE_MS before SIGKILL; each stops in 1-2 s.
  const hard = setTimeout(() => {
    console.error(`stop did not finish within ${HARD_STOP_MS / 1000} s; exiting`);
    process.exit(1);
  }, HARD_STOP_MS);
  await stopEverything(ACTOR_STOP_GRACE_MS, NODE_STOP_GRACE_MS).catch((e) => console.error(e));
  clearTimeout(hard);
  process.exit(code);
};
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));
process.on('SIGHUP', () => void stop(0));

console.log(`starting a 3-node NATS cluster (data in ${join(config.dataDir, 'cluster')}) and ${processes.length} processes...`);
try {
  sys = await startSystem({
    dataDir: config.dataDir,
    ...(randomPorts ? {} : { clientPorts: DEFAULT_CLIENT_PORTS, clusterPorts: DEFAULT_CLUSTER_PORTS }),
    processes,
    replicas: 3,
    syncInterval: config.nats.syncInterval,
    port: config.server.port,
    logLevel: config.server.logLevel,
    echo: true,
    ...(readyTimeoutMs ? { readyTimeoutMs } : {}),
    ...(process.env.CONFIG_FILE ? { configFile: process.env.CONFIG_FILE } : {}),
  });
} catch (e) {
  console.error(`cluster: start failed: ${(e as Error).message}`);
  await stop(1);
}
const s = sys!;
const gw = s.gateway();
console.log('\nPayloads is running as a cluster.');
if (gw) {
  console.log(`  API:      ${gw.url}/v1\n  Account:  ${gw.url}/account\n  OpenAPI:  ${gw.url}/openapi.json`);
}
console.log(`  NATS_URL: ${s.cluster.url}  (3 replicas)`);
for (const n of s.cluster.nodes)
  console.log(`  node ${n.name}: ${n.url}, routes on ${n.clusterPort}, pid ${n.handle?.pid}, store ${n.storeDir}`);
for (const p of s.procs) console.log(`  ${p.label.padEnd(16)} pid ${p.pid}`);
console.log('Ctrl-C stops everything.\n');

// a process that dies is reported (not restarted: a supervisor such as systemd or a Procfile runner does that)
for (const p of s.procs) {
  void p.exited.then((code) => {
    if (!stopping) console.error(`[cluster] ${p.label} (pid ${p.pid}) exited: ${code}`);
  });
}
