import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { startTestNats } from '../helpers/nats.ts';
import { provision, streamConfigs, bucketConfigs, storeConfigs } from '../../shared/nats/provision.ts';

t.test('provisioning creates every stream, bucket and store, and is idempotent', async (t) => {
  const { nc, config } = await startTestNats(t);
  const first = await provision(nc, config);
  const second = await provision(nc, config);
  t.same(second, first);
  const jsm = await jetstreamManager(nc);
  const names: string[] = [];
  for await (const s of jsm.streams.list()) names.push(s.config.name);
  for (const s of streamConfigs(config)) t.ok(names.includes(s.name!), `stream ${s.name}`);
  for (const b of bucketConfigs(config)) t.ok(names.includes(`KV_${b.name}`), `bucket ${b.name}`);
  for (const s of storeConfigs(config)) t.ok(names.includes(`OBJ_${s.name}`), `store ${s.name}`);
});

t.test('changed retention is applied to an existing store on the next start', async (t) => {
  const { nc, config } = await startTestNats(t);
  const changed = { ...config, retention: { ...config.retention, labs: 3600 } };
  await provision(nc, changed);
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info('OBJ_reports');
  t.equal(info.config.max_age, (3600 * 1000 + 3600 * 1000) * 1e6);
});

t.test('buckets are read from their leader (jobs by direct get on one replica), also a bucket made earlier with direct gets', async (t) => {
  const { nc, config } = await startTestNats(t);
  const jsm = await jetstreamManager(nc);
  for (const b of bucketConfigs(config))
    t.equal(
      (await jsm.streams.info(`KV_${b.name}`)).config.allow_direct,
      b.name === 'jobs' && config.nats.replicas === 1,
      `${b.name}: direct gets only for jobs on one replica`,
    );
  // an installation provisioned before this rule: its bucket allowed direct gets
  const { Kvm } = await import('@nats-io/kv');
  await jsm.streams.delete('KV_topups');
  await new Kvm(nc).create('topups', { history: 1, allow_direct: true });
  t.equal((await jsm.streams.info('KV_topups')).config.allow_direct, true, 'the old bucket allows direct gets');
  await provision(nc, config);
  t.equal((await jsm.streams.info('KV_topups')).config.allow_direct, false, 'the next start turns them off');
  const kv = await new Kvm(nc).open('topups');
  await kv.put('k', 'v');
  t.equal((await kv.get('k'))?.string(), 'v', 'and the bucket reads through the leader');
});

t.test('the fetch cache is bounded by its config: size (oldest out first) and age', async (t) => {
  const { nc, config } = await startTestNats(t);
  const jsm = await jetstreamManager(nc);
  const c = (await jsm.streams.info('KV_fetch_cache')).config;
  t.equal(c.max_bytes, config.websitepro.cacheMaxBytes);
  t.equal(c.max_age, config.websitepro.cacheMaxAgeSeconds * 1e9);
  t.equal(c.discard, 'old', 'a full cache drops its oldest pages, not new writes');
  await provision(nc, { ...config, websitepro: { ...config.websitepro, cacheMaxBytes: 8 * 1024 * 1024, cacheMaxAgeSeconds: 600 } });
  const d = (await jsm.streams.info('KV_fetch_cache')).config;
  t.equal(d.max_bytes, 8 * 1024 * 1024, 'a changed size bound is applied on the next start');
  t.equal(d.max_age, 600 * 1e9);
});
