// The start of `npm run cluster`'s NATS cluster (scripts/cluster-lib.ts): once it reports the
// cluster formed, a stream with a replica on every node can be placed at once. Before, a start was
// reported formed as soon as JetStream answered, while nats-server's meta group could still be
// without a node for good ("no suitable peers for placement", about 2 starts in 5 here): the first
// actor retried that for 60 s and exited. Two starts here (each failed that way alone about 40 % of
// the time); `node --import tsx scripts/diagnostics/cluster-starts.ts 20` is the 20-start proof.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { jetstreamManager, StorageType } from '@nats-io/jetstream';
import { startNatsCluster, waitForPlacement } from '../../scripts/cluster-lib.ts';
import { waitForMetaGroup } from '../../scripts/cluster-ready.ts';
import { connectNats } from '../../shared/nats/connect.ts';
import { tempDir } from '../helpers/nats.ts';

for (const n of [1, 2]) {
  t.test(`start ${n}: reported formed, it places a 3-replica stream at the first try`, async (t) => {
    const cluster = await startNatsCluster({ dataDir: tempDir('payloads-cstart-') });
    t.teardown(() => cluster.stop());
    const nc = await connectNats(cluster.url, 'cluster-start-test');
    t.teardown(() => nc.close());
    const jsm = await jetstreamManager(nc, { timeout: 10000 });
    const info = await jsm.streams.add({ name: 'R3_AT_ONCE', subjects: ['r3.at.once'], storage: StorageType.File, num_replicas: 3 });
    t.equal(info.config.num_replicas, 3);
    const names: string[] = [];
    for await (const s of jsm.streams.names()) names.push(s);
    t.same(names, ['R3_AT_ONCE'], 'the placement probe left no stream behind');
    // each node's log is kept beside its store, from its first line
    for (const node of cluster.nodes)
      t.match(
        readFileSync(join(node.storeDir, 'nats-server.log'), 'utf8'),
        /Starting nats-server[\s\S]*Server is ready/,
        `${node.name}: its log on disk`,
      );
    // each node serves its monitoring on loopback, and its /jsz counts every node in the meta group
    // (how a start formed without one is told at once: test/platform/meta-group.test.ts)
    for (const node of cluster.nodes)
      t.match(node.handle?.monitorUrl, /^http:\/\/127\.0\.0\.1:\d+$/, `${node.name}: monitoring on loopback`);
    t.equal(
      await waitForMetaGroup(
        cluster.nodes.map((n) => n.handle!.monitorUrl!),
        3,
        5000,
      ),
      'complete',
      'every node counts 3 members and names one leader',
    );
    if (n === 2) {
      // a placement that cannot be made is reported with what could not be done, not waited on for good
      await t.rejects(waitForPlacement(cluster.url, 5, 2000), /could not place a 5-replica stream within 2000 ms: .*no suitable peers/);
    }
  });
}
