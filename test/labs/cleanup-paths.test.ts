// Issue 20 item 6: the NIP-09 clean-up runs on every path where test events were published, not
// only when a module finishes: a module that times out or stops on a fatal error after publishing
// leaves nothing of its own behind but the kind-5 requests.
import t from 'tap';
import { miniRelay } from '../helpers/mini-relay.ts';
import { probe, fatalCode } from './fixtures/probe.ts';

const testEvents = (relay: { events: Map<string, { kind: number; tags: string[][] }> }) =>
  [...relay.events.values()].filter((e) => e.kind !== 5);

t.test('a module that times out after publishing deletes its test events', async (t) => {
  const relay = await miniRelay(t, {});
  // live-delivery stores a note, then idle outlasts the module's time limit
  const code = await fatalCode(() =>
    probe(relay.url, 'custom', ['live-delivery', 'idle'], { labs: { moduleTimeoutMs: 1500, idleMs: 10_000 } }),
  );
  t.equal(code, 'timeout');
  t.same(testEvents(relay), [], 'no test event left on the relay');
  t.ok(
    [...relay.events.values()].some((e) => e.kind === 5),
    'the deletion request was sent',
  );
});

t.test('a module stopped by write_restricted half-way through the dataset deletes what was stored', async (t) => {
  const relay = await miniRelay(t, { rateLimitAfter: 4 });
  const code = await fatalCode(() => probe(relay.url, 'custom', ['filter-ids']));
  t.equal(code, 'write_restricted');
  t.same(testEvents(relay), [], 'the 4 dataset events that were stored are deleted');
});

t.test('a relay that never answers the deletion: the clean-up gives up within its bound and the failure stands', async (t) => {
  const relay = await miniRelay(t, { noOkForDeletions: true });
  const code = await fatalCode(() =>
    probe(relay.url, 'custom', ['live-delivery', 'idle'], { labs: { moduleTimeoutMs: 1500, idleMs: 10_000, replyTimeoutMs: 500 } }),
  );
  t.equal(code, 'timeout', 'the run still ends as a timeout');
  t.equal(testEvents(relay).length, 1, 'the note the relay would not delete is still there (nothing hides that)');
});
