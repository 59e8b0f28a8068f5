import { Kvm } from '@nats-io/kv';
import { startNatsCluster } from '/work/main/scripts/cluster-lib.ts';
import { connectNats } from '/work/main/shared/nats/connect.ts';
import { provision } from '/work/main/shared/nats/provision.ts';
import { testConfig, tempDir } from '/work/main/test/helpers/nats.ts';
import { advertise, readCatalogue } from '/work/main/shared/catalogue.ts';
import { BUCKETS } from '/work/main/shared/names.ts';
const cluster = await startNatsCluster({ dataDir: tempDir('x-') });
const config = testConfig({ nats: { url: cluster.url, replicas: 3 } }, cluster.url);
for (;;) { try { await provision(await connectNats(cluster.nodes[0]!.url, 'p'), config); break; } catch { await new Promise(r=>setTimeout(r,300)); } }
const r = await connectNats(cluster.nodes[2]!.url, 'r'); const w = await connectNats(cluster.nodes[0]!.url, 'w');
const kv = await new Kvm(r).open(BUCKETS.catalogue);
await readCatalogue(kv, 'shots');
for (let i = 0; i < 5; i++) {
  let t0 = performance.now(); const ad = await advertise(w, 'shots', 'i'+i, () => ({}));
  let t1 = performance.now(); await readCatalogue(kv, 'shots'); let t2 = performance.now();
  await readCatalogue(kv, 'shots'); let t3 = performance.now();
  await ad.stop(); let t4 = performance.now();
  console.log((t1-t0).toFixed(1), (t2-t1).toFixed(1), (t3-t2).toFixed(1), (t4-t3).toFixed(1));
}
await r.close(); await w.close(); await cluster.stop();
