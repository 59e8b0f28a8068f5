// A conformant relay (the mini fixture with NIP-42 on): every check passes, except those that
// cannot be observed on it (documented skips). Reports validate against labs.report/1.
import t from 'tap';
import { startMiniRelay } from './fixtures/mini-relay.ts';
import { probe } from './fixtures/probe.ts';
import { BOUNDS } from '../../actors/relay-prober/probe.ts';
import { moduleChecks } from '../../actors/relay-prober/checks/index.ts';

const relay = await startMiniRelay({}, { auth: true });
t.teardown(() => relay.close());

t.test('quick: all pass on a conformant relay', async (t) => {
  const { report } = await probe(relay.url, 'quick');
  t.equal(report.schema, 'labs.report/1');
  t.equal(report.checks.length, moduleChecks('quick').length);
  const notPass = report.checks.filter((c) => c.status !== 'pass').map((c) => `${c.id}:${c.status}`);
  t.same(notPass.sort(), ['latency:info', 'tls:skip'], 'only the measurement and the TLS skip (ws://)');
  t.equal(report.score, 100);
  t.equal(report.relay.software, 'mini-relay');
  t.equal(report.relay.version, '1.0.0');
  for (const k of ['connect', 'eose', 'ok'] as const) {
    const l = report.latency[k];
    t.ok(l && l.samples >= 3 && l.min <= l.p50 && l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.max, `${k} percentiles ordered`);
  }
  t.equal(report.testData.deletionHonoured, true, 'test events deleted');
  t.same(report.testData.marker, ['t', 'labs-test']);
});

t.test('conformance: all pass on a conformant relay', async (t) => {
  const { report } = await probe(relay.url, 'conformance');
  const notPass = report.checks.filter((c) => c.status !== 'pass').map((c) => `${c.id}:${c.status}`);
  // max_limit 500 and no PoW cannot be observed with a handful of test events
  t.same(
    notPass.sort(),
    ['limit-max-limit:skip', 'limit-pow:skip'],
    JSON.stringify(report.checks.filter((c) => c.status !== 'pass').map((c) => c.message)),
  );
  t.equal(report.testData.deletionHonoured, true);
  t.ok(
    report.usage.connections <= BOUNDS.connections &&
      report.usage.subscriptions <= BOUNDS.subscriptions &&
      report.testData.eventsSent <= BOUNDS.events,
    'within the documented bounds',
  );
  const rows = Object.fromEntries(report.advertisedVsObserved.map((r) => [r.claim, r]));
  t.equal(rows['supported_nips: 42']?.agrees, true);
  t.equal(rows['supported_nips: 45']?.agrees, true);
  t.equal(rows['limitation.max_subscriptions']?.agrees, true);
  t.equal(rows['supported_nips: 9']?.agrees, true);
  // only the kind-5 deletion requests (which NIP-09 says to keep serving) remain
  t.same([...new Set([...relay.events.values()].map((e) => e.kind))], [5]);
  t.ok(
    [...relay.events.values()].every((e) => e.tags.some((x) => x[0] === 't' && x[1] === 'labs-test')),
    'every remaining test event carries the marker',
  );
});
