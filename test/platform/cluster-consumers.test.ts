// The cluster launcher drops the ephemeral consumers its actors left (KV watches, ordered reads)
// before it stops the nodes (shared/nats/ephemeral.ts, scripts/cluster-lib.ts), so the next start
// restores none of them; durable consumers stay. The control: a cluster stopped without it restores
// them, as seen at 1 M jobs (42 at one start, a start that failed: docs/notes/issue-26.md, session 23).
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { startNatsCluster, startSystem, stopEverything } from '../../scripts/cluster-lib.ts';
import { connectNats } from '../../shared/nats/connect.ts';
import { tempDir } from '../helpers/nats.ts';
import { retry } from '../helpers/cluster.ts';

/** What a stopped actor leaves: a KV watch and an ordered read (ephemeral), beside a durable consumer. */
async function leaveConsumers(url: string) {
  const nc = await connectNats(url, 'actor');
  const jsm = await retry(() => jetstreamManager(nc));
  await retry(() => jsm.streams.add({ name: 'S', subjects: ['s.>'], num_replicas: 3 }), 60_000, 500);
  await jsm.consumers.add('S', { durable_name: 'kept', ack_policy: AckPolicy.Explicit });
  await nc.request('s.1', 'one');
  const kv = await new Kvm(nc).create('b', { replicas: 3 });
  await kv.put('k', 'v');
  const watch = await kv.watch();
  for await (const e of watch) if (e.key === 'k') break;
  const read = await (await jetstream(nc).consumers.get('S')).consume();
  for await (const m of read) if (m.seq === 1) break;
  await nc.close(); // as a process that stops: nothing deleted
}

/**
 * The consumers of streams S and KV_b once the cluster in `dataDir` has started again, looked at
 * for `watchMs` after the durable one is listed (restored consumers come back with their streams):
 * the durable names, and the most ephemeral ones seen at once.
 */
async function afterRestart(t: { teardown(fn: () => unknown): void }, dataDir: string, watchMs: number) {
  const again = await startNatsCluster({ dataDir });
  t.teardown(() => again.stop());
  const nc = await connectNats(again.url, 'check');
  t.teardown(() => nc.close());
  const jsm = await retry(() => jetstreamManager(nc));
  const list = async () => {
    const out = { durable: [] as string[], ephemeral: [] as string[] };
    for (const stream of ['S', 'KV_b']) {
      for (const c of await retry(() => jsm.consumers.list(stream).next(), 60_000, 500)) (c.config.durable_name ? out.durable : out.ephemeral).push(c.name);
    }
    return out;
  };
  let seen = await list();
  for (let i = 0; i < 300 && !seen.durable.length; i++) seen = await new Promise((r) => setTimeout(r, 200)).then(list);
  const until = Date.now() + watchMs;
  while (Date.now() < until) {
    const now = await list();
    if (now.ephemeral.length > seen.ephemeral.length) seen = now;
    await new Promise((r) => setTimeout(r, 250));
  }
  return seen;
}

t.test('the launcher\'s stop drops the ephemeral consumers: the next start restores none', async (t) => {
  const dataDir = tempDir('payloads-cluster-consumers-');
  const sys = await startSystem({ dataDir, processes: [], replicas: 3 });
  await leaveConsumers(sys.cluster.url);
  await stopEverything(5000, 15000);
  const left = await afterRestart(t, dataDir, 5000);
  t.same(left.durable, ['kept'], 'the durable consumer is kept');
  t.same(left.ephemeral, [], 'no watch or ordered read comes back');
});

t.test('control: a cluster stopped without it restores them', async (t) => {
  const dataDir = tempDir('payloads-cluster-consumers-');
  const cluster = await startNatsCluster({ dataDir });
  await leaveConsumers(cluster.url);
  await cluster.stop();
  const left = await afterRestart(t, dataDir, 5000);
  t.same(left.durable, ['kept']);
  t.equal(left.ephemeral.length, 2, `the watch and the ordered read are restored (${left.ephemeral.join(', ')})`);
});
