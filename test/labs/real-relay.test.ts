// Against a real relay implementation (@nostr-relay/core + validator + SQLite over ws, NIP-11 from
// the same HTTP server): the checks it passes, and the faults it is known to have are caught.
import t from 'tap';
import { startTestRelay } from './fixtures/relay.ts';
import { probe } from './fixtures/probe.ts';
import { BOUNDS } from '../../actors/relay-prober/probe.ts';

const relay = await startTestRelay();
t.teardown(() => relay.close());

t.test('quick', async (t) => {
  const { report, status } = await probe(relay.url, 'quick');
  for (const id of [
    'dns',
    'tcp',
    'websocket',
    'nip11-served',
    'nip11-cors',
    'nip11-fields',
    'req-eose',
    'publish-ok',
    'read-back',
    'live-delivery',
    'reconnect',
    'idle',
    'cleanup',
  ])
    t.equal(status(id), 'pass', `${id}: ${report.checks.find((c) => c.id === id)?.message}`);
  t.equal(status('tls'), 'skip', 'ws:// has no TLS');
  t.equal(status('latency'), 'info');
  t.equal(report.relay.software, 'https://github.com/CodyTseng/nostr-relay');
  t.equal(report.relay.version, '0.0.40');
  t.equal(report.score, 100);
  t.equal(report.testData.deletionHonoured, true);
});

t.test('conformance', async (t) => {
  const { report, status } = await probe(relay.url, 'conformance');
  const passes = [
    'filter-ids',
    'filter-authors',
    'filter-kinds',
    'filter-e',
    'filter-p',
    'filter-tag',
    'filter-or-list',
    'filter-and',
    'filter-or-filters',
    'filter-since',
    'filter-until',
    'filter-bounds',
    'filter-limit',
    'filter-limit-zero',
    'filter-limit-live',
    'kind-regular',
    'kind-replaceable',
    'kind-addressable',
    'kind-replaceable-older',
    'kind-ephemeral',
    'close-stops',
    'event-subid',
    'subid-replace',
    'subid-per-conn',
    'bad-signature',
    'bad-id',
    'json-escapes',
    'empty-tags',
    'duplicate',
    'delete-e',
    'delete-a',
    'delete-others',
    'nip40-expiration',
    'ok-format',
  ];
  for (const id of passes) t.equal(status(id), 'pass', `${id}: ${report.checks.find((c) => c.id === id)?.message}`);
  // known faults of @nostr-relay/core 0.0.40 (see research notes): each caught by its check
  t.equal(status('closed-prefix'), 'fail', 'invalid REQ answered with NOTICE instead of CLOSED');
  t.equal(status('nip45-count'), 'fail', 'COUNT answered with NOTICE');
  t.equal(status('nip70-protected'), 'fail', 'protected events accepted without AUTH');
  t.equal(status('filter-nonmatching'), 'fail', 'live events ignore tag filters');
  t.equal(status('limit-subscriptions'), 'warn', 'the 21st subscription silently evicts the oldest');
  t.equal(status('nip42-auth'), 'skip', 'NIP-42 off');
  t.ok(['pass', 'warn'].includes(status('filter-order')!), 'tie order is a recommendation: pass or warn');
  const rows = Object.fromEntries(report.advertisedVsObserved.map((r) => [r.claim, r]));
  t.equal(rows['supported_nips: 45']?.agrees, false, 'advertises 45, does not answer COUNT');
  t.equal(rows['supported_nips: 70']?.agrees, false);
  t.equal(rows['limitation.max_subscriptions']?.agrees, false);
  t.ok(
    report.usage.connections <= BOUNDS.connections &&
      report.usage.subscriptions <= BOUNDS.subscriptions &&
      report.testData.eventsSent <= BOUNDS.events,
  );
  t.ok(report.score > 50 && report.score < 100, `score ${report.score}`);
  t.equal(report.summary.total, report.checks.length);
  t.equal(
    report.summary.pass + report.summary.fail + report.summary.warn + report.summary.skip + report.summary.info,
    report.summary.total,
  );
});

t.test('NIP-42 on: challenge, OK, and bad AUTH events refused', async (t) => {
  const r2 = await startTestRelay({ auth: true });
  t.teardown(() => r2.close());
  const { status, report } = await probe(r2.url, 'custom', ['nip42-auth', 'nip42-refusals', 'no-such-check']);
  t.equal(report.checks.length, 2, 'unknown ids ignored');
  t.equal(status('nip42-auth'), 'pass', report.checks[0]!.message);
  t.equal(status('nip42-refusals'), 'pass', report.checks[1]!.message);
});
