import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import { startNatsServer } from '../../shared/nats/server.ts';
import { connectNats } from '../../shared/nats/connect.ts';
import { provision } from '../../shared/nats/provision.ts';
import { createKey, keysBucket, lookupKey } from '../../shared/keys.ts';
import { BUCKETS, subjects } from '../../shared/names.ts';
import { tempDir, testConfig } from '../helpers/nats.ts';

t.test('a second start on the same data folder finds everything that was there', async (t) => {
  const store = tempDir('payloads-restart-');
  const config = testConfig();
  let server = await startNatsServer({ storeDir: store, port: -1 });
  let nc = await connectNats(server.url, 'first');
  await provision(nc, config);
  const { key, walletId } = await createKey(nc, 'admin');
  const jobs = await new Kvm(nc).open(BUCKETS.jobs);
  await jobs.put('job_1', JSON.stringify({ id: 'job_1', walletId }));
  await jetstream(nc).publish(subjects.ledger(walletId), JSON.stringify({ type: 'grant', amount: 5 }), { msgID: 'grant:1' });
  await nc.close();
  await server.stop();

  server = await startNatsServer({ storeDir: store, port: -1 });
  t.teardown(() => server.destroy());
  nc = await connectNats(server.url, 'second');
  t.teardown(() => nc.close());
  await provision(nc, config);
  t.same(await lookupKey(await keysBucket(nc), key), {
    walletId,
    createdAt: (await lookupKey(await keysBucket(nc), key))!.createdAt,
    via: 'admin',
  });
  const job = await (await new Kvm(nc).open(BUCKETS.jobs)).get('job_1');
  t.equal(job?.json<{ walletId: string }>().walletId, walletId);
  const ack = await jetstream(nc).publish(subjects.ledger(walletId), JSON.stringify({ type: 'grant', amount: 5 }), { msgID: 'grant:1' });
  t.equal(ack.duplicate, true, 'the dedupe window survived the restart');
});
