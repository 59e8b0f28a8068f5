// The 3-node cluster itself: real nats-server processes with routes, everything provisioned with 3
// replicas, the loss of one node tolerated (KV and streams still writable), and the node catching
// up when it comes back.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager, jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { startNatsCluster, DEFAULT_CLIENT_PORTS, DEFAULT_CLUSTER_PORTS } from '../../scripts/cluster-lib.ts';
import { connectNats } from '../../shared/nats/connect.ts';
import { provision } from '../../shared/nats/provision.ts';
import { BUCKETS, STREAMS, subjects } from '../../shared/names.ts';
import { ROOT, loadConfig } from '../../shared/config/index.ts';
import { tempDir, testConfig } from '../helpers/nats.ts';
import { retry } from '../helpers/cluster.ts';

t.test("config/cluster: three valid node files with the launcher's ports, and cluster.json asks for 3 replicas", async (t) => {
  for (let i = 0; i < 3; i++) {
    const file = join(ROOT, 'config', 'cluster', `n${i + 1}.conf`);
    const text = readFileSync(file, 'utf8');
    t.match(text, new RegExp(`\\nport: ${DEFAULT_CLIENT_PORTS[i]}\\n`), `n${i + 1} client port`);
    t.match(text, new RegExp(`port: ${DEFAULT_CLUSTER_PORTS[i]}\\n`), `n${i + 1} cluster port`);
    for (const [j, p] of DEFAULT_CLUSTER_PORTS.entries())
      if (j !== i) t.match(text, `nats-route://127.0.0.1:${p}`, `n${i + 1} routes to n${j + 1}`);
    // nats-server's own check of the file
    const r = spawnSync('nats-server', ['-c', file, '-t'], { encoding: 'utf8' });
    t.equal(r.status, 0, `nats-server -t accepts n${i + 1}.conf`);
    t.match(r.stdout + r.stderr, /is valid/);
  }
  const cfg = loadConfig({ env: { CONFIG_FILE: join(ROOT, 'config', 'cluster.json') } });
  t.equal(cfg.nats.replicas, 3);
  t.equal(cfg.nats.url.split(',').length, 3);
});

t.test('3-node cluster: replicas 3 everywhere, one node lost, writes go on, the node catches up', async (t) => {
  const dataDir = tempDir('payloads-cluster-');
  const cluster = await startNatsCluster({ dataDir });
  t.teardown(() => cluster.stop());
  const config = testConfig({ nats: { replicas: 3 } }, cluster.url);
  const nc = await connectNats(cluster.url, 'cluster-test');
  t.teardown(() => nc.close());

  const p = await provision(nc, config);
  const jsm = await jetstreamManager(nc);
  const all = [...p.streams, ...p.buckets.map((b) => `KV_${b}`), ...p.stores.map((s) => `OBJ_${s}`)];
  for (const name of all) {
    const info = await jsm.streams.info(name);
    t.equal(info.config.num_replicas, 3, `${name} has 3 replicas`);
    t.equal((info.cluster?.replicas ?? []).length, 2, `${name}: a leader and two followers`);
  }
  // provisioning again (every process does it on start) changes nothing
  await provision(nc, config);

  const kv = await new Kvm(nc).open(BUCKETS.jobs);
  await kv.put('before', '1');
  const leader = (await jsm.streams.info(`KV_${BUCKETS.jobs}`)).cluster!.leader!;
  const victim = cluster.nodes.findIndex((n) => `payloads-${n.name}` === leader);
  t.ok(victim >= 0, `the leader of KV_jobs is a node of ours (${leader})`);
  await cluster.kill(victim);

  // the remaining two elect a new leader; the client reconnects to a live node
  const deadline = Date.now() + 20000;
  let written = false;
  let n = 0;
  while (Date.now() < deadline && !written) {
    try {
      await kv.put('during', String(++n));
      written = true;
    } catch {
      await sleep(200);
    }
  }
  t.ok(written, 'the KV bucket is writable with one node down');
  const js = jetstream(nc);
  const ack = await retry(() => js.publish(subjects.ledger('w_cluster'), JSON.stringify({ n: 1 }), { msgID: 'cluster-test-1' }));
  t.equal(ack.stream, STREAMS.ledger, 'the ledger stream takes writes with one node down');
  t.equal((await retry(() => kv.get('before')))?.string(), '1', 'what was written before is still there');

  await cluster.restart(victim);
  // the restarted node catches up: every replica current again
  const caughtUp = Date.now() + 30000;
  let ok = false;
  while (Date.now() < caughtUp && !ok) {
    const info = await jsm.streams.info(`KV_${BUCKETS.jobs}`);
    ok = (info.cluster?.replicas ?? []).length === 2 && info.cluster!.replicas!.every((r) => r.current && !r.offline);
    if (!ok) await sleep(250);
  }
  t.ok(ok, 'the restarted node is a current replica again');
  const dup = await retry(() => js.publish(subjects.ledger('w_cluster'), JSON.stringify({ n: 1 }), { msgID: 'cluster-test-1' }));
  t.equal(dup.duplicate, true, 'the dedupe window survived the failover');
});
