// Live catalogues (shared/catalogue.ts): instances advertise in the `catalogue` bucket; readers keep
// one watch per process instead of listing the bucket (a new server-side consumer) per request, and
// each read waits for the watch to catch up with the stream, so it sees every earlier advertisement.
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { jetstreamManager } from '@nats-io/jetstream';
import { startTestNats } from '../helpers/nats.ts';
import { startTestCluster } from '../helpers/cluster.ts';
import { advertise, readCatalogue } from '../../shared/catalogue.ts';
import { BUCKETS, catalogueKey } from '../../shared/names.ts';

const ids = async (kv: Parameters<typeof readCatalogue>[0], service: 'shots' | 'labs') =>
  (await readCatalogue(kv, service)).map((e) => e.instanceId);

t.test('instances appear, change and vanish; other services and stale entries are not listed', async (t) => {
  const tn = await startTestNats(t);
  const kv = await new Kvm(tn.nc).open(BUCKETS.catalogue);
  const a = await advertise(await tn.connect('a'), 'shots', 'a', () => ({ browsers: ['chromium'] }));
  t.same(await ids(kv, 'shots'), ['a'], 'the first read sees the instance that advertised before it');
  const b = await advertise(await tn.connect('b'), 'shots', 'b', () => ({ browsers: ['firefox'] }));
  await advertise(await tn.connect('l'), 'labs', 'l', () => ({}));
  t.same(await ids(kv, 'shots'), ['a', 'b'], 'an instance that advertised just before the read is in it');
  t.same(await ids(kv, 'labs'), ['l'], 'each service lists its own instances');
  await kv.put(
    catalogueKey('shots', 'old'),
    JSON.stringify({ service: 'shots', instanceId: 'old', at: Date.now() - 60_000, catalogue: {} }),
  );
  t.same(await ids(kv, 'shots'), ['a', 'b'], 'an entry not refreshed for 30 s is not live');
  await b.stop();
  t.same(await ids(kv, 'shots'), ['a'], 'a stopped instance is gone from the next read');
  await a.stop();
  t.same(await ids(kv, 'shots'), [], 'none left');
});

t.test('reads do not create a consumer each', async (t) => {
  const tn = await startTestNats(t);
  const kv = await new Kvm(tn.nc).open(BUCKETS.catalogue);
  await advertise(await tn.connect('a'), 'shots', 'a', () => ({}));
  // every consumer creation is a request on $JS.API.CONSUMER.CREATE.<stream>[...]: count them
  let creates = 0;
  const spy = tn.nc.subscribe(`$JS.API.CONSUMER.CREATE.KV_${BUCKETS.catalogue}.>`, {
    callback: () => {
      creates++;
    },
  });
  const spy2 = tn.nc.subscribe(`$JS.API.CONSUMER.CREATE.KV_${BUCKETS.catalogue}`, {
    callback: () => {
      creates++;
    },
  });
  await tn.nc.flush();
  for (let i = 0; i < 50; i++) t.equal((await readCatalogue(kv, 'shots')).length, 1);
  await tn.nc.flush();
  spy.unsubscribe();
  spy2.unsubscribe();
  t.ok(creates <= 1, `${creates} consumer creation(s) for 50 reads (one watch at most)`);
});

t.test('a read right after an advertisement sees it, also from another node of a cluster', async (t) => {
  const { connect } = await startTestCluster(t);
  const kv = await new Kvm(await connect(2, 'reader')).open(BUCKETS.catalogue);
  const writer = await connect(0, 'writer');
  t.same(await ids(kv, 'shots'), [], 'nothing advertised yet');
  let missed = 0;
  for (let i = 0; i < 40; i++) {
    const ad = await advertise(writer, 'shots', `i${i}`, () => ({}));
    if (!(await ids(kv, 'shots')).includes(`i${i}`)) missed++;
    await ad.stop();
    if ((await ids(kv, 'shots')).includes(`i${i}`)) missed++;
  }
  t.equal(missed, 0, 'every read reflects the writes acknowledged before it');
});

t.test('a watch that lost its server-side consumer does not keep reads stale', async (t) => {
  const tn = await startTestNats(t);
  const kv = await new Kvm(tn.nc).open(BUCKETS.catalogue);
  const a = await advertise(await tn.connect('a'), 'shots', 'a', () => ({}));
  t.same(await ids(kv, 'shots'), ['a']);
  const jsm = await jetstreamManager(tn.nc);
  const watchers = await jsm.consumers.list(`KV_${BUCKETS.catalogue}`).next();
  t.equal(watchers.length, 1, "the watch is the bucket's only consumer");
  await jsm.consumers.delete(`KV_${BUCKETS.catalogue}`, watchers[0]!.name);
  const b = await advertise(await tn.connect('b'), 'shots', 'b', () => ({}));
  t.teardown(async () => {
    await a.stop();
    await b.stop();
  });
  await ids(kv, 'shots'); // may answer from the old watch after waiting for it
  t.same(await ids(kv, 'shots'), ['a', 'b'], 'the next read sees the new instance');
  t.same(await ids(kv, 'shots'), ['a', 'b'], 'and so does the one after');
});

t.test('concurrent reads share their stream-info requests and still see earlier advertisements', async (t) => {
  const tn = await startTestNats(t);
  const kv = await new Kvm(tn.nc).open(BUCKETS.catalogue);
  const a = await advertise(await tn.connect('a'), 'shots', 'a', () => ({}));
  t.teardown(() => a.stop());
  await readCatalogue(kv, 'shots'); // the copy is loaded
  let infos = 0;
  const spy = tn.nc.subscribe(`$JS.API.STREAM.INFO.KV_${BUCKETS.catalogue}`, {
    callback: () => {
      infos++;
    },
  });
  await tn.nc.flush();
  const reads = await Promise.all(Array.from({ length: 50 }, () => readCatalogue(kv, 'shots')));
  await tn.nc.flush();
  spy.unsubscribe();
  t.ok(
    reads.every((r) => r.length === 1),
    'every read sees the instance',
  );
  t.ok(infos <= 2, `${infos} stream-info request(s) for 50 concurrent reads (fails with one per read)`);
});

t.test(
  '`enough`: a copy that already offers what is needed answers without a round trip; a shortfall is confirmed as of now',
  async (t) => {
    const tn = await startTestNats(t);
    const kv = await new Kvm(tn.nc).open(BUCKETS.catalogue);
    const writer = await tn.connect('w');
    const a = await advertise(writer, 'websitepro', 'a', () => ({}));
    t.teardown(() => a.stop());
    await readCatalogue(kv, 'websitepro'); // loaded, and a is in it
    let infos = 0;
    const spy = tn.nc.subscribe(`$JS.API.STREAM.INFO.KV_${BUCKETS.catalogue}`, {
      callback: () => {
        infos++;
      },
    });
    await tn.nc.flush();
    for (let i = 0; i < 20; i++) t.equal((await readCatalogue(kv, 'websitepro', (e) => e.length > 0)).length, 1);
    await tn.nc.flush();
    t.equal(infos, 0, 'no stream-info request while the copy offers enough (fails when every read syncs)');
    // a shortfall: the labs instance advertised just now must be seen, never refused from the copy
    let refused = 0;
    for (let i = 0; i < 20; i++) {
      const l = await advertise(writer, 'labs', `l${i}`, () => ({}));
      if (!(await readCatalogue(kv, 'labs', (e) => e.some((x) => x.instanceId === `l${i}`))).some((x) => x.instanceId === `l${i}`))
        refused++;
      await l.stop();
    }
    spy.unsubscribe();
    t.equal(refused, 0, 'an answer that falls short is read as of now');
  },
);
