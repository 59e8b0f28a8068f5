// followCatalogue (shared/catalogue.ts): what a precomputed answer built from the live catalogue
// follows. It is told when an instance advertises, stops, or ages out without a notification
// (the bucket's max age sends none), and nothing more once stopped.
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { startTestNats } from '../helpers/nats.ts';
import { advertise, followCatalogue, readCatalogue } from '../../shared/catalogue.ts';
import { BUCKETS, catalogueKey } from '../../shared/names.ts';

/** Resolves on the next call of the follower, or rejects after `ms`. */
function nextChange(calls: { wake?: () => void }, ms = 5000): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no change reported in ${ms} ms`)), ms);
    calls.wake = () => {
      clearTimeout(timer);
      calls.wake = undefined;
      resolve();
    };
  });
}

t.test('a follower hears of advertisements, stops and entries that age out', async (t) => {
  const tn = await startTestNats(t);
  const kv = await new Kvm(tn.nc).open(BUCKETS.catalogue);
  const calls: { n: number; wake?: () => void } = { n: 0 };
  const stop = followCatalogue(kv, () => {
    calls.n++;
    calls.wake?.();
  });
  t.teardown(stop);

  let change = nextChange(calls);
  const a = await advertise(await tn.connect('a'), 'shots', 'a', () => ({}));
  await change;
  t.same(
    (await readCatalogue(kv, 'shots')).map((e) => e.instanceId),
    ['a'],
    'the catalogue holds the instance when the follower is told',
  );

  change = nextChange(calls);
  await a.stop();
  await change;
  t.same(await readCatalogue(kv, 'shots'), [], 'told of the stop');

  // an entry 29.5 s old is live now and ages out within a second, with no KV notification
  await kv.put(
    catalogueKey('labs', 'dying'),
    JSON.stringify({ service: 'labs', instanceId: 'dying', at: Date.now() - 29_500, catalogue: {} }),
  );
  await nextChange(calls); // the put itself
  const before = calls.n;
  await nextChange(calls, 4000);
  t.ok(calls.n > before, 'told again when the entry aged out');
  t.same(await readCatalogue(kv, 'labs'), [], 'and it is no longer live');

  stop();
  const after = calls.n;
  await advertise(await tn.connect('b'), 'shots', 'b', () => ({}));
  await readCatalogue(kv, 'shots'); // the watch has delivered it by now
  await new Promise((r) => setTimeout(r, 1200));
  t.equal(calls.n, after, 'a stopped follower is not told');
});
