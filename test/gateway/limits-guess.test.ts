import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { startTestNats } from '../helpers/nats.ts';
import { takeToken } from '../../shared/limits.ts';
import { BUCKETS } from '../../shared/names.ts';

// Each process keeps what it last wrote per counter: a take is then one compare-and-set write, not
// a read and a write; the write itself checks the guess.

t.test('shared limit: takes after the first read nothing (one write each)', async (t) => {
  const tn = await startTestNats(t);
  const kv = await new Kvm(tn.nc).open(BUCKETS.limits);
  const spy = await tn.connect('spy');
  let reads = 0;
  spy.subscribe('$JS.API.STREAM.MSG.GET.KV_limits', {
    callback: () => {
      reads++;
    },
  });
  spy.subscribe('$JS.API.DIRECT.GET.KV_limits.>', {
    callback: () => {
      reads++;
    },
  });
  await spy.flush();
  for (let i = 0; i < 10; i++) t.ok((await takeToken(kv, 'jobs', 'k', 600, 3600_000)).allowed);
  await tn.nc.flush();
  await spy.flush();
  t.equal(reads, 1, 'one read, for the first take');
  t.equal(JSON.parse((await kv.get('rate.jobs.k'))!.string()).length, 10, 'every take stored');
});

t.test('shared limit: two processes taking in turn stay exact (a stale guess is refused by the write)', async (t) => {
  const tn = await startTestNats(t);
  const kv1 = await new Kvm(tn.nc).open(BUCKETS.limits);
  const kv2 = await new Kvm(await tn.connect('second')).open(BUCKETS.limits);
  let allowed = 0;
  for (let i = 0; i < 40; i++) if ((await takeToken(i % 2 ? kv1 : kv2, 'c', 'k', 15, 3600_000)).allowed) allowed++;
  t.equal(allowed, 15, 'exactly the limit, alternating writers');
  t.equal(JSON.parse((await kv1.get('rate.c.k'))!.string()).length, 15);
});

t.test('shared limit: a refusal is decided on the stored counter, not the guess', async (t) => {
  const tn = await startTestNats(t);
  const kv = await new Kvm(tn.nc).open(BUCKETS.limits);
  for (let i = 0; i < 3; i++) t.ok((await takeToken(kv, 'c', 'r', 3, 3600_000)).allowed);
  t.notOk((await takeToken(kv, 'c', 'r', 3, 3600_000)).allowed, 'full');
  // an operator resets the counter from elsewhere: the next take is allowed at once
  const other = await new Kvm(await tn.connect('operator')).open(BUCKETS.limits);
  await other.delete('rate.c.r');
  t.ok((await takeToken(kv, 'c', 'r', 3, 3600_000)).allowed, 'allowed after the reset');
});
