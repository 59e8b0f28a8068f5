// The severity model of docs/labs.md on relays that behave like widely deployed ones: the level of
// every verdict comes from the NIP's own words, and an optional NIP the relay does not advertise
// can at most warn.
import t from 'tap';
import { startMiniRelay } from './fixtures/mini-relay.ts';
import { probe } from './fixtures/probe.ts';
import { judge } from '../../actors/relay-prober/run.ts';
import { checkById } from '../../actors/relay-prober/checks/index.ts';
import { Probe } from '../../actors/relay-prober/probe.ts';
import { fastConfig } from './fixtures/probe.ts';

t.test(
  'a relay that advertises only NIP-01/11, keeps ephemeral events briefly and sends an AUTH challenge it cannot honour: no fail',
  async (t) => {
    const relay = await startMiniRelay({ keepEphemeralMs: 180_000, challengeOnly: true }, { nips: [1, 11] });
    t.teardown(() => relay.close());
    for (const module of ['quick', 'conformance'] as const) {
      const { report, status } = await probe(relay.url, module);
      const fails = report.checks.filter((c) => c.status === 'fail').map((c) => `${c.id}: ${c.message}`);
      t.same(fails, [], `${module}: no fail`);
      if (module === 'conformance') {
        t.equal(status('kind-ephemeral'), 'warn', 'kept ephemeral event: a warn ("not expected to be stored")');
        const auth = report.checks.find((c) => c.id === 'nip42-auth')!;
        t.equal(auth.status, 'warn', 'AUTH offered half-way: a warn');
        t.match(auth.message, /offered but broken \(NIP-42 is not in supported_nips\)/);
        t.equal(auth.advertised, false);
        t.match(auth.basis.quote, /AUTH/);
        t.match(report.checks.find((c) => c.id === 'kind-ephemeral')!.basis.quote, /not expected to be stored/);
      }
    }
  },
);

t.test('an advertised optional NIP that fails is a fail and is in the advertised-vs-observed table', async (t) => {
  const relay = await startMiniRelay({ challengeOnly: true }, { nips: [1, 9, 11, 40, 42, 45, 70] });
  t.teardown(() => relay.close());
  const { report, status } = await probe(relay.url, 'custom', ['nip42-auth']);
  t.equal(status('nip42-auth'), 'fail');
  const row = report.advertisedVsObserved.find((r) => r.claim === 'supported_nips: 42');
  t.equal(row?.agrees, false);
  t.equal(row?.checkId, 'nip42-auth');
});

t.test('judge: the rule of a finding caps its status', async (t) => {
  const p = new Probe('ws://127.0.0.1:1/', fastConfig());
  const c = checkById.get('filter-ids')!;
  t.equal(judge(c, { status: 'fail', message: 'x' }, p).status, 'fail', 'MUST: fail stays');
  t.equal(
    judge(c, { status: 'fail', message: 'x', rule: { nip: '01', level: 'recommended', quote: 'SHOULD' } }, p).status,
    'warn',
    'SHOULD: at most warn',
  );
  t.equal(judge(c, { status: 'fail', message: 'x', rule: { nip: '01', level: 'optional', quote: 'MAY' } }, p).status, 'info', 'MAY: info');
  t.equal(judge(c, { status: 'warn', message: 'x', rule: { nip: '01', level: 'optional', quote: 'MAY' } }, p).status, 'info');
  t.equal(judge(checkById.get('latency')!, { status: 'pass', message: 'x' }, p).status, 'info', 'measurement: info');
  // no NIP-11 document: supported_nips unknown, so an optional NIP is not "advertised"
  const v = judge(checkById.get('nip70-protected')!, { status: 'fail', message: 'accepted' }, p);
  t.equal(v.status, 'warn');
  t.equal(v.advertised, null);
});
