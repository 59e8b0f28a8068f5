// Issue 28 item 7: the NIP-09 clean-up is never cut short by the module's own limits or a crash: its
// connection is reserved beyond the 24-connection budget, and the throwaway keys are kept in NATS
// (labs_cleanups) until the deletion is sent, so another prober deletes what a dead one left.
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Probe, BOUNDS } from '../../actors/relay-prober/probe.ts';
import { cleanup } from '../../actors/relay-prober/checks/index.ts';
import { runModule } from '../../actors/relay-prober/run.ts';
import { startCleanups } from '../../actors/relay-prober/cleanups.ts';
import { start } from '../../actors/relay-prober/index.ts';
import { startMiniRelay } from './fixtures/mini-relay.ts';
import { fastConfig, fastLabs, fastWebhooks } from './fixtures/probe.ts';
import { startTestNats, testLog } from '../helpers/nats.ts';
import { BUCKETS } from '../../shared/names.ts';

const testEvents = (relay: { events: Map<string, { kind: number }> }) => [...relay.events.values()].filter((e) => e.kind !== 5);
const until = async (f: () => Promise<boolean> | boolean, ms = 20_000) => {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await f()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
};

t.test('a module that used its whole connection budget still deletes its test events', async (t) => {
  const relay = await startMiniRelay({});
  t.teardown(() => relay.close());
  const p = new Probe(relay.url, fastConfig());
  t.teardown(() => p.stop());
  const c = await p.conn();
  t.equal((await p.publish(p.sign({ kind: 1, content: 'a test note' }), c)).ok, true);
  while (p.usage.connections < BOUNDS.connections) (await p.open()).close();
  c.close(); // the relay dropped the shared connection too
  t.ok(await until(() => c.closed), 'the shared connection is closed');
  const r = await cleanup(p);
  t.ok(r.requests >= 1, 'the deletion was sent');
  t.same(testEvents(relay), [], 'nothing left on the relay');
});

t.test('keys are kept from before the first event until the deletion is sent', async (t) => {
  const relay = await startMiniRelay({});
  t.teardown(() => relay.close());
  const tn = await startTestNats(t, { labs: { ...fastLabs, allowedPorts: [relay.port] } });
  const kv = await new Kvm(tn.nc).open(BUCKETS.labsCleanups);
  const keepers = startCleanups({ kv, config: tn.config, log: testLog(), instanceId: 'p1', everyMs: 3600_000 });
  t.teardown(() => keepers.stop());
  const entries = async () => {
    const out: string[] = [];
    for await (const k of await kv.keys()) out.push(k);
    return out;
  };
  let seenDuring = 0;
  const keeper = {
    ...keepers.keeper,
    async record(p: Probe) {
      await keepers.keeper.record(p);
      seenDuring = (await entries()).length;
    },
  };
  await runModule({ url: relay.url, module: 'custom', checks: ['live-delivery'], config: tn.config, cleanups: keeper });
  t.equal(seenDuring, 1, 'written before the first event went out');
  t.same(await entries(), [], 'gone once the deletion was sent');
  t.same(testEvents(relay), []);
});

t.test('a prober deletes the test events a crashed prober left', async (t) => {
  const relay = await startMiniRelay({});
  t.teardown(() => relay.close());
  const tn = await startTestNats(t, { labs: { ...fastLabs, allowedPorts: [relay.port] }, webhooks: fastWebhooks });
  // the crashed run: its keys written down, an event stored, no deletion ever sent
  const dead = new Probe(relay.url, tn.config);
  const kv = await new Kvm(tn.nc).open(BUCKETS.labsCleanups);
  await kv.put(
    'deadrun',
    JSON.stringify({ v: 1, relay: relay.url, keys: dead.keys.map((k) => bytesToHex(k.sk)), until: Date.now() - 1000, by: 'crashed' }),
  );
  t.equal((await dead.publish(dead.sign({ kind: 1, content: 'left behind' }))).ok, true);
  t.equal((await dead.publish(dead.sign({ kind: 1, content: 'another' }, 1))).ok, true);
  dead.stop();
  t.equal(testEvents(relay).length, 2);

  const actor = await start({ nc: tn.nc, config: tn.config, log: testLog(), instanceId: 'prober-next' });
  t.teardown(() => actor.stop());
  t.ok(await until(() => testEvents(relay).length === 0), 'the next prober deleted them');
  t.ok(
    await until(async () => {
      const e = await kv.get('deadrun');
      return !e || e.operation !== 'PUT';
    }),
    'and dropped the keys',
  );
});
