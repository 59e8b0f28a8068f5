// dropEphemeralConsumers (shared/nats/ephemeral.ts), which the cluster launcher runs after its actors
// stopped: the KV watches and ordered reads a closed client left are deleted, durable consumers kept.
// On one real nats-server; the cluster restart it is for: docs/notes/issue-26.md, session 23.
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { startTestNats } from '../helpers/nats.ts';
import { dropEphemeralConsumers } from '../../shared/nats/ephemeral.ts';

t.test('the consumers a closed client left: ephemeral ones dropped, durable ones kept', async (t) => {
  const tn = await startTestNats(t);
  const client = await tn.connect('actor');
  const jsm = await jetstreamManager(client);
  await jsm.streams.add({ name: 'S', subjects: ['s.>'] });
  await jsm.consumers.add('S', { durable_name: 'kept', ack_policy: AckPolicy.Explicit });
  await client.request('s.1', 'one');
  const kv = await new Kvm(client).create('b');
  await kv.put('k', 'v');
  for await (const e of await kv.watch()) if (e.key === 'k') break;
  for await (const m of await (await jetstream(client).consumers.get('S')).consume()) if (m.seq === 1) break;
  await client.close();

  const names = async () => {
    const j = await jetstreamManager(tn.nc);
    const out = { durable: [] as string[], ephemeral: [] as string[] };
    for (const stream of ['S', 'KV_b'])
      for (const c of await j.consumers.list(stream).next()) (c.config.durable_name ? out.durable : out.ephemeral).push(c.name);
    return out;
  };
  const before = await names();
  t.equal(before.ephemeral.length, 2, `the watch and the ordered read outlive their client (${before.ephemeral.join(', ')})`);
  t.equal(await dropEphemeralConsumers(tn.nc), 2, 'two dropped');
  t.same(await names(), { durable: ['kept'], ephemeral: [] }, 'the durable consumer is all that is left');
  t.equal(await dropEphemeralConsumers(tn.nc), 0, 'nothing the second time');
});
