// Each fault of the mini fixture relay is caught by the check that exists for it, at the level the
// NIP's own words give (docs/labs.md, severity model): MUST fails, SHOULD/convention warns, MAY is info.
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Faults } from './fixtures/mini-relay.ts';
import { miniRelay } from '../helpers/mini-relay.ts';
import { closedPort } from '../helpers/ports.ts';
import { startTestRelay } from './fixtures/relay.ts';
import { probe, fatalCode } from './fixtures/probe.ts';

interface Case {
  name: string;
  faults: Faults;
  auth?: boolean;
  nips?: number[];
  checks: string[];
  expect: Record<string, string>;
}

const cases: Case[] = [
  {
    name: 'OK refusal without prefix',
    faults: { okNoPrefix: true },
    checks: ['bad-signature', 'ok-format'],
    expect: { 'bad-signature': 'pass', 'ok-format': 'fail' },
  },
  {
    name: 'NOTICE instead of CLOSED',
    faults: { noticeInsteadOfClosed: true },
    checks: ['closed-prefix'],
    expect: { 'closed-prefix': 'fail' },
  },
  {
    name: 'non-matching stored events returned',
    faults: { nonMatching: true },
    checks: ['filter-e', 'filter-nonmatching'],
    expect: { 'filter-e': 'fail', 'filter-nonmatching': 'fail' },
  },
  {
    name: 'live events ignore tag filters',
    faults: { liveNonMatching: true },
    checks: ['filter-e', 'filter-nonmatching'],
    expect: { 'filter-e': 'pass', 'filter-nonmatching': 'fail' },
  },
  {
    name: 'events for closed subscriptions',
    faults: { closedSubEvents: true },
    checks: ['close-stops', 'subid-per-conn'],
    expect: { 'close-stops': 'warn', 'subid-per-conn': 'fail' },
  },
  {
    name: 'EVENT for a subscription never opened',
    faults: { strayEvents: true },
    checks: ['live-delivery', 'event-subid'],
    expect: { 'live-delivery': 'pass', 'event-subid': 'fail' },
  },
  {
    name: 'no NIP-11',
    faults: { noNip11: true },
    checks: ['nip11-served', 'nip11-cors', 'nip11-fields'],
    expect: { 'nip11-served': 'warn', 'nip11-cors': 'skip', 'nip11-fields': 'skip' },
  },
  {
    name: 'missing CORS',
    faults: { noCors: true },
    checks: ['nip11-served', 'nip11-cors'],
    expect: { 'nip11-served': 'pass', 'nip11-cors': 'fail' },
  },
  {
    name: 'writes refused (quick)',
    faults: { refuseWrites: true },
    checks: ['req-eose', 'publish-ok', 'read-back', 'limit-auth-writes'],
    expect: { 'req-eose': 'pass', 'publish-ok': 'skip', 'read-back': 'skip', 'limit-auth-writes': 'pass' },
  },
  { name: 'connection dropped on EVENT', faults: { dropOnEvent: true }, checks: ['publish-ok'], expect: { 'publish-ok': 'fail' } },
  {
    name: 'bad signatures and ids accepted',
    faults: { acceptBadSig: true },
    checks: ['bad-signature', 'bad-id'],
    expect: { 'bad-signature': 'fail', 'bad-id': 'fail' },
  },
  {
    name: 'replaceable versions kept',
    faults: { noReplace: true },
    checks: ['kind-replaceable', 'kind-addressable', 'kind-replaceable-older', 'filter-authors'],
    expect: { 'kind-replaceable': 'warn', 'kind-addressable': 'warn', 'kind-replaceable-older': 'warn', 'filter-authors': 'warn' },
  },
  {
    name: 'deletion ignored',
    faults: { noDelete: true },
    checks: ['delete-e', 'delete-a', 'cleanup'],
    expect: { 'delete-e': 'warn', 'delete-a': 'warn', cleanup: 'warn' },
  },
  { name: "others' events deleted", faults: { deleteOthers: true }, checks: ['delete-others'], expect: { 'delete-others': 'warn' } },
  { name: 'ephemeral events stored', faults: { storeEphemeral: true }, checks: ['kind-ephemeral'], expect: { 'kind-ephemeral': 'warn' } },
  {
    name: 'protected events accepted',
    faults: { acceptProtected: true },
    checks: ['nip70-protected'],
    expect: { 'nip70-protected': 'fail' },
  },
  { name: 'expired events served', faults: { acceptExpired: true }, checks: ['nip40-expiration'], expect: { 'nip40-expiration': 'warn' } },
  {
    name: 'max_subscriptions not enforced',
    faults: { noLimitOnSubs: true },
    checks: ['limit-subscriptions'],
    expect: { 'limit-subscriptions': 'warn' },
  },
  {
    name: 'oldest first',
    faults: { oldestFirst: true },
    checks: ['filter-limit', 'filter-order'],
    expect: { 'filter-limit': 'warn', 'filter-order': 'warn' },
  },
  { name: 'COUNT answered with NOTICE', faults: { countAsNotice: true }, checks: ['nip45-count'], expect: { 'nip45-count': 'fail' } },
  {
    name: 'AUTH accepts anything',
    faults: { authAcceptsAnything: true },
    auth: true,
    checks: ['nip42-auth', 'nip42-refusals'],
    expect: { 'nip42-auth': 'pass', 'nip42-refusals': 'fail' },
  },
  {
    name: 'a deletion by a tag also blocks newer versions',
    faults: { deleteAddrForever: true },
    checks: ['delete-a'],
    expect: { 'delete-a': 'warn' },
  },
  {
    name: 'OK true but nothing stored',
    faults: { dropWrites: true },
    checks: ['publish-ok', 'read-back'],
    expect: { 'publish-ok': 'pass', 'read-back': 'warn' },
  },
  {
    name: 'no live delivery',
    faults: { noLive: true },
    checks: ['live-delivery', 'kind-ephemeral'],
    expect: { 'live-delivery': 'warn', 'kind-ephemeral': 'warn' },
  },
  {
    name: 'since/until exclusive',
    faults: { exclusiveBounds: true },
    checks: ['filter-since', 'filter-until', 'filter-bounds'],
    expect: { 'filter-since': 'pass', 'filter-until': 'pass', 'filter-bounds': 'warn' },
  },
  {
    name: 'limit 0 returns everything',
    faults: { limitZeroAll: true },
    checks: ['filter-limit-zero'],
    expect: { 'filter-limit-zero': 'warn' },
  },
  {
    name: 'limit applied to live events',
    faults: { limitLive: true },
    checks: ['filter-limit-live'],
    expect: { 'filter-limit-live': 'fail' },
  },
  { name: 'content altered', faults: { mangleContent: true }, checks: ['json-escapes'], expect: { 'json-escapes': 'fail' } },
  { name: 'duplicate refused as an error', faults: { duplicateRefused: true }, checks: ['duplicate'], expect: { duplicate: 'warn' } },
  {
    name: 'advertised limits not enforced',
    faults: { noLimits: true },
    checks: ['limit-content-length', 'limit-event-tags', 'limit-created-at', 'limit-message-length'],
    expect: { 'limit-content-length': 'warn', 'limit-event-tags': 'warn', 'limit-created-at': 'warn', 'limit-message-length': 'warn' },
  },
  { name: 'REQ closed without a prefix', faults: { reqClosed: true }, checks: ['req-eose'], expect: { 'req-eose': 'fail' } },
  { name: 'no second connection', faults: { maxConnections: 2 }, checks: ['reconnect'], expect: { reconnect: 'info' } },
  { name: 'connection dropped when idle', faults: { idleDropMs: 80 }, checks: ['idle'], expect: { idle: 'info' } },
  // behaviours real relays have on purpose or by configuration (issue 21): the level their NIP gives
  {
    name: 'ephemeral events kept for a few minutes',
    faults: { keepEphemeralMs: 180_000 },
    checks: ['kind-ephemeral'],
    expect: { 'kind-ephemeral': 'warn' },
  },
  {
    name: 'AUTH challenge it cannot honour, NIP-42 not advertised',
    faults: { challengeOnly: true },
    checks: ['nip42-auth', 'nip42-refusals', 'nip70-protected-auth'],
    expect: { 'nip42-auth': 'warn', 'nip42-refusals': 'skip', 'nip70-protected-auth': 'skip' },
  },
  {
    name: 'AUTH challenge it cannot honour, NIP-42 advertised',
    faults: { challengeOnly: true },
    nips: [1, 9, 11, 40, 42, 45, 70],
    checks: ['nip42-auth'],
    expect: { 'nip42-auth': 'fail' },
  },
  {
    name: 'upper-case ERROR:/INVALID: prefixes',
    faults: { upperCasePrefixes: true },
    checks: ['closed-prefix', 'ok-format', 'bad-signature'],
    expect: { 'closed-prefix': 'warn', 'ok-format': 'warn', 'bad-signature': 'pass' },
  },
  {
    name: 'equal created_at, ties not by lowest id',
    faults: { tiesByHighestId: true },
    checks: ['filter-order', 'filter-limit'],
    expect: { 'filter-order': 'warn', 'filter-limit': 'pass' },
  },
  {
    name: 'NIP-11 served as application/json',
    faults: { nip11AsJson: true },
    checks: ['nip11-served', 'nip11-cors', 'nip11-fields'],
    expect: { 'nip11-served': 'pass', 'nip11-cors': 'pass', 'nip11-fields': 'pass' },
  },
  {
    name: 'NIP-45 advertised, COUNT answered with CLOSED',
    faults: { countClosed: true },
    checks: ['nip45-count', 'nip45-hll'],
    expect: { 'nip45-count': 'warn', 'nip45-hll': 'skip' },
  },
  {
    name: 'NIP-45 not advertised, COUNT answered with CLOSED',
    faults: { countClosed: true },
    nips: [1, 9, 11, 40, 70],
    checks: ['nip45-count'],
    expect: { 'nip45-count': 'skip' },
  },
  {
    name: 'NIP-45 not advertised, COUNT answered with NOTICE',
    faults: { countAsNotice: true },
    nips: [1, 9, 11, 40, 70],
    checks: ['nip45-count'],
    expect: { 'nip45-count': 'skip' },
  },
  {
    name: 'hll with the wrong offset',
    faults: { hllWrongOffset: true },
    checks: ['nip45-count', 'nip45-hll'],
    expect: { 'nip45-count': 'pass', 'nip45-hll': 'warn' },
  },
  {
    name: 'protected events accepted, NIP-70 not advertised',
    faults: { acceptProtected: true },
    nips: [1, 9, 11, 40, 45],
    checks: ['nip70-protected'],
    expect: { 'nip70-protected': 'warn' },
  },
  {
    name: 'NIP-77 advertised, NEG-OPEN answered with NEG-ERR',
    faults: { negErr: true },
    checks: ['nip77-negentropy'],
    expect: { 'nip77-negentropy': 'warn' },
  },
  {
    name: 'NIP-77 answer leaves an event out',
    faults: { negWrongSet: true },
    checks: ['nip77-negentropy'],
    expect: { 'nip77-negentropy': 'fail' },
  },
  {
    name: 'NIP-77 not advertised',
    faults: {},
    nips: [1, 9, 11, 40, 45, 70],
    checks: ['nip77-negentropy'],
    expect: { 'nip77-negentropy': 'skip' },
  },
  {
    name: "another key's protected event accepted after AUTH",
    faults: { acceptProtected: true },
    auth: true,
    checks: ['nip70-protected-auth'],
    expect: { 'nip70-protected-auth': 'fail' },
  },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const relay = await miniRelay(t, c.faults, { auth: c.auth, ...(c.nips ? { nips: c.nips } : {}) });
    const { report, status } = await probe(relay.url, 'custom', c.checks);
    t.same(report.checks.map((x) => x.id).sort(), [...c.checks].sort(), 'exactly the selected checks ran');
    for (const [id, want] of Object.entries(c.expect))
      t.equal(status(id), want, `${id}: ${report.checks.find((x) => x.id === id)?.message}`);
  });
}

t.test('a relay that requires AUTH: the probe authenticates and the checks run', async (t) => {
  const relay = await miniRelay(t, {}, { authRequired: true });
  const { report } = await probe(relay.url, 'custom', ['req-eose', 'publish-ok', 'read-back', 'filter-ids', 'limit-auth-writes']);
  t.same(
    report.checks.map((c) => `${c.id}:${c.status}`),
    ['req-eose:pass', 'publish-ok:pass', 'read-back:pass', 'filter-ids:pass', 'limit-auth-writes:pass'],
    report.checks.map((c) => c.message).join(' | '),
  );
  t.equal(report.advertisedVsObserved.find((r) => r.claim === 'limitation.auth_required')?.agrees, true);
});

t.test('NIP-11 fields of the wrong type warn (the document structure is a SHOULD)', async (t) => {
  const relay = await startTestRelay({
    info: { name: 5, pubkey: 'not-hex', supported_nips: '1,11', limitation: { max_limit: '10', auth_required: 'no' } },
  });
  t.teardown(() => relay.close());
  const { status, report } = await probe(relay.url, 'custom', ['nip11-fields']);
  t.equal(status('nip11-fields'), 'warn');
  const wrong = report.checks[0]!.details.wrong as string[];
  t.ok(
    wrong.includes('name is not a string') &&
      wrong.includes('pubkey is not 64 lowercase hex') &&
      wrong.includes('limitation.max_limit is not an integer'),
    wrong.join('; '),
  );
  t.equal(report.relay.supportedNips, null);
});

t.test('a relay that never answers is not_a_relay', async (t) => {
  const relay = await miniRelay(t, { silent: true });
  t.equal(await fatalCode(() => probe(relay.url, 'quick')), 'not_a_relay');
});

t.test('an HTTP server without WebSocket is not_a_relay', async (t) => {
  const http = createServer((_q, r) => r.end('hello'));
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => http.close(() => r())));
  t.equal(await fatalCode(() => probe(`ws://127.0.0.1:${(http.address() as AddressInfo).port}/`, 'quick')), 'not_a_relay');
});

t.test('nothing listening is unreachable', async (t) => {
  const port = await closedPort();
  t.equal(await fatalCode(() => probe(`ws://127.0.0.1:${port}/`, 'quick')), 'unreachable');
});

t.test('refused writes make conformance write_restricted', async (t) => {
  const relay = await miniRelay(t, { refuseWrites: true });
  t.equal(await fatalCode(() => probe(relay.url, 'conformance')), 'write_restricted');
});

t.test('a module over its time limit is a timeout', async (t) => {
  const relay = await miniRelay(t, {});
  t.equal(await fatalCode(() => probe(relay.url, 'custom', ['idle'], { labs: { moduleTimeoutMs: 1000, idleMs: 5000 } })), 'timeout');
});

t.test('private addresses are refused without the test allow-list', async (t) => {
  const relay = await miniRelay(t, {});
  const { runModule } = await import('../../actors/relay-prober/run.ts');
  const { fastConfig } = await import('./fixtures/probe.ts');
  t.equal(
    await fatalCode(() => runModule({ url: relay.url, module: 'quick', config: fastConfig({}, { outbound: { allowCidrs: [] } }) })),
    'unreachable',
  );
  t.equal(relay.connections(), 0, 'no connection was made');
});
