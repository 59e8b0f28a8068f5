// KvMirror (shared/nats/kv-mirror.ts): a process's copy of a bucket, fed by one watch, that a
// reader can sync with the stream so it sees every write acknowledged before the read.
import t from 'tap';
import { Kvm, type KvWatchEntry } from '@nats-io/kv';
import { jetstreamManager } from '@nats-io/jetstream';
import { startTestNats } from '../helpers/nats.ts';
import { startTestCluster } from '../helpers/cluster.ts';
import { KvMirror } from '../../shared/nats/kv-mirror.ts';
import type { Logger } from '../../shared/log.ts';
import { BUCKETS } from '../../shared/names.ts';

/** A mirror into a Map, as the catalogue and the jobs projection keep theirs. */
function mapMirror(kv: ConstructorParameters<typeof KvMirror>[0], o: ConstructorParameters<typeof KvMirror>[2] = {}, applyMs = 0) {
  const map = new Map<string, string>();
  let applied = 0;
  const mirror = new KvMirror(
    kv,
    (e: KvWatchEntry) => {
      applied++;
      for (const until = performance.now() + applyMs; performance.now() < until; ); // a slow consumer
      if (e.operation === 'PUT') map.set(e.key, e.string());
      else map.delete(e.key);
    },
    o,
  );
  return { map, mirror, applied: () => applied };
}

t.test('loads what the bucket holds, then every sync sees the writes before it (cluster: written on node 0, read on node 2)', async (t) => {
  const { connect } = await startTestCluster(t);
  const writer = await new Kvm(await connect(0, 'writer')).open(BUCKETS.jobs);
  await writer.put('before', 'x');
  const m = mapMirror(await new Kvm(await connect(2, 'reader')).open(BUCKETS.jobs));
  t.teardown(() => m.mirror.stop());
  await m.mirror.loaded;
  t.same([...m.map], [['before', 'x']], 'the initial values');
  let missed = 0;
  for (let i = 0; i < 40; i++) {
    await writer.put(`k${i % 5}`, String(i));
    if (i % 7 === 0) await writer.delete(`k${i % 5}`);
    t.ok(await m.mirror.sync(), `sync ${i}`);
    const want = i % 7 === 0 ? undefined : String(i);
    if (m.map.get(`k${i % 5}`) !== want) missed++;
  }
  t.equal(missed, 0, 'no read missed a write acknowledged before it');
});

t.test('an empty bucket loads at once; a sync with nothing new answers without waiting for anything', async (t) => {
  const tn = await startTestNats(t);
  const m = mapMirror(await new Kvm(tn.nc).open(BUCKETS.jobs));
  t.teardown(() => m.mirror.stop());
  await m.mirror.loaded;
  t.equal(m.map.size, 0);
  t.ok(await m.mirror.sync(), 'in sync');
  t.equal(m.applied(), 0, 'nothing delivered');
});

t.test('a watch that lost its server-side consumer is replaced and delivers again', async (t) => {
  const tn = await startTestNats(t);
  const kv = await new Kvm(tn.nc).open(BUCKETS.jobs);
  await kv.put('a', '1');
  const m = mapMirror(kv, { stallMs: 300 });
  t.teardown(() => m.mirror.stop());
  await m.mirror.loaded;
  const jsm = await jetstreamManager(tn.nc);
  const consumers = async () => (await jsm.consumers.list(`KV_${BUCKETS.jobs}`).next()).map((c) => c.name);
  const [old] = await consumers();
  t.ok(old, "the watch is the bucket's consumer");
  await jsm.consumers.delete(`KV_${BUCKETS.jobs}`, old!);
  await kv.put('b', '2');
  t.ok(await m.mirror.sync(5000), 'the sync replaces the silent watch and the fresh one catches up');
  t.same(
    [...m.map].sort(),
    [
      ['a', '1'],
      ['b', '2'],
    ],
    'both values, the old one applied again harmlessly',
  );
  const now = await consumers();
  t.equal(now.length, 1, 'one consumer again');
  t.not(now[0], old, 'a new one');
  await kv.put('c', '3');
  t.ok(await m.mirror.sync(), 'the fresh watch follows live writes');
  t.equal(m.map.get('c'), '3');
});

t.test('a slow copy catching up on 2000 writes keeps its watch', async (t) => {
  // about the copy's catch-up, not the disk: with an fsync per write (sync_interval always) the 2000
  // writes themselves arrive slowly on a loaded machine and the watch looks stalled between them
  const tn = await startTestNats(t, { nats: { syncInterval: '2m' } });
  const kv = await new Kvm(tn.nc).open(BUCKETS.jobs);
  const writer = await new Kvm(await tn.connect('writer')).open(BUCKETS.jobs);
  const warnings: string[] = [];
  const log = {
    warn: (...a: unknown[]) => {
      warnings.push(String(a.at(-1)));
    },
  } as unknown as Logger;
  // 1 ms per entry: 2000 entries keep the copy behind for about 2 s, far past the 300 ms stall bound.
  // (The status answer shares the watch's connection, so a sync here mostly sees the copy caught up;
  // the rule "replace only a silent watch" itself is not isolated by this test.)
  const m = mapMirror(kv, { stallMs: 300, log }, 1);
  t.teardown(() => m.mirror.stop());
  await m.mirror.loaded;
  const jsm = await jetstreamManager(tn.nc);
  const [watch] = (await jsm.consumers.list(`KV_${BUCKETS.jobs}`).next()).map((c) => c.name);
  const started = Date.now();
  const writes = Array.from({ length: 2000 }, (_, i) => writer.put(`k${i % 50}`, String(i)));
  const early = m.mirror.sync(20_000); // asked while the writes arrive: waits through the catch-up
  await Promise.all(writes);
  await writer.put('last', 'x');
  t.ok(await early, 'the early sync caught up');
  t.ok(await m.mirror.sync(20_000), 'caught up');
  t.ok(Date.now() - started > 300, `the copy was behind for longer than the stall bound (${Date.now() - started} ms)`);
  t.equal(m.map.get('last'), 'x');
  t.same(
    (await jsm.consumers.list(`KV_${BUCKETS.jobs}`).next()).map((c) => c.name),
    [watch],
    'the same watch throughout',
  );
  t.same(warnings, [], 'no replacement');
});

t.test('a closed connection ends the mirror: not alive, syncs answer false at once', async (t) => {
  const tn = await startTestNats(t);
  const nc = await tn.connect('closing');
  const m = mapMirror(await new Kvm(nc).open(BUCKETS.jobs));
  await m.mirror.loaded;
  await nc.close();
  for (let i = 0; i < 50 && m.mirror.alive; i++) await new Promise((r) => setTimeout(r, 100));
  t.notOk(m.mirror.alive, 'the mirror stopped with its connection');
  t.notOk(await m.mirror.sync(), 'sync answers false');
  await m.mirror.stop();
});
