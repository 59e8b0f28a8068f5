// Live catalogues (shared/catalogue.ts): instances advertise in the `catalogue` bucket; readers keep
// one watch per process instead of listing the bucket (a new server-side consumer) per request.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kvm } from '@nats-io/kv';
import { startTestNats } from '../helpers/nats.ts';
import { advertise, readCatalogue } from '../../shared/catalogue.ts';
import { BUCKETS, catalogueKey } from '../../shared/names.ts';

const ids = async (kv: Parameters<typeof readCatalogue>[0], service: 'shots' | 'labs') => (await readCatalogue(kv, service)).map((e) => e.instanceId);
async function eventually<T>(fn: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  let v = await fn();
  for (let i = 0; i < 100 && !ok(v); i++) v = (await sleep(20), await fn());
  return v;
}

t.test('instances appear, change and vanish; other services and stale entries are not listed', async (t) => {
  const tn = await startTestNats(t);
  const kv = await new Kvm(tn.nc).open(BUCKETS.catalogue);
  const a = await advertise(await tn.connect('a'), 'shots', 'a', () => ({ browsers: ['chromium'] }));
  t.same(await ids(kv, 'shots'), ['a'], 'the first read sees the instance that advertised before it');
  const b = await advertise(await tn.connect('b'), 'shots', 'b', () => ({ browsers: ['firefox'] }));
  await advertise(await tn.connect('l'), 'labs', 'l', () => ({}));
  t.same(await eventually(() => ids(kv, 'shots'), (v) => v.length === 2), ['a', 'b'], 'an instance started later is seen through the watch');
  t.same(await ids(kv, 'labs'), ['l'], 'each service lists its own instances');
  await kv.put(catalogueKey('shots', 'old'), JSON.stringify({ service: 'shots', instanceId: 'old', at: Date.now() - 60_000, catalogue: {} }));
  await sleep(100);
  t.same(await ids(kv, 'shots'), ['a', 'b'], 'an entry not refreshed for 30 s is not live');
  await b.stop();
  t.same(await eventually(() => ids(kv, 'shots'), (v) => v.length === 1), ['a'], 'a stopped instance vanishes');
  await a.stop();
  t.same(await eventually(() => ids(kv, 'shots'), (v) => v.length === 0), [], 'none left');
});

t.test('reads do not create a consumer each', async (t) => {
  const tn = await startTestNats(t);
  const kv = await new Kvm(tn.nc).open(BUCKETS.catalogue);
  await advertise(await tn.connect('a'), 'shots', 'a', () => ({}));
  // every consumer creation is a request on $JS.API.CONSUMER.CREATE.<stream>[...]: count them
  let creates = 0;
  const spy = tn.nc.subscribe(`$JS.API.CONSUMER.CREATE.KV_${BUCKETS.catalogue}.>`, { callback: () => { creates++; } });
  const spy2 = tn.nc.subscribe(`$JS.API.CONSUMER.CREATE.KV_${BUCKETS.catalogue}`, { callback: () => { creates++; } });
  await tn.nc.flush();
  for (let i = 0; i < 50; i++) t.equal((await readCatalogue(kv, 'shots')).length, 1);
  await tn.nc.flush();
  spy.unsubscribe();
  spy2.unsubscribe();
  t.ok(creates <= 1, `${creates} consumer creation(s) for 50 reads (one watch at most)`);
});
