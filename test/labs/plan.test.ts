// The labs service module: request validation and pricing (plan), and the checks before any charge
// (precheck): blocked_address, unreachable, relay_busy, bad_webhook.
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { startTestNats } from '../helpers/nats.ts';
import { BUCKETS } from '../../shared/names.ts';
import { ApiError } from '../../shared/errors.ts';
import { advertise } from '../../shared/catalogue.ts';
import { labs, parseRelayUrl } from '../../shared/services/labs.ts';
import { labsCatalogue } from '../../actors/relay-prober/index.ts';
import { keyFromSeed } from '../../shared/webhook.ts';
import { startMiniRelay } from './fixtures/mini-relay.ts';
import { startWallet, fund } from '../wallet/_helpers.ts';

const relay = await startMiniRelay({});
t.teardown(() => relay.close());
const tn = await startTestNats(t, { labs: { allowedPorts: [443, 80, relay.port], relayTestsPerHour: 3 } });
const { nc, config } = tn;
// the precheck spends a relay test only for a job its wallet can pay (a real wallet answers)
await startWallet(t, tn);
const ad = await advertise(nc, 'labs', 'plan-test', () => labsCatalogue(config, keyFromSeed('b2'.repeat(32))));
t.teardown(() => ad.stop());
const kvm = new Kvm(nc);
const ctx = {
  config,
  nc,
  walletId: 'wallet-1',
  catalogueKv: await kvm.open(BUCKETS.catalogue),
  datasetsKv: await kvm.open(BUCKETS.datasets),
};

const code = async (p: Promise<unknown>) => {
  try {
    await p;
    return null;
  } catch (e) {
    return e instanceof ApiError ? e.code : String(e);
  }
};

t.test('relay addresses', async (t) => {
  const ports = config.labs.allowedPorts;
  t.equal(parseRelayUrl('relay.example.com', ports).href, 'wss://relay.example.com/', 'bare host means wss://');
  t.equal(parseRelayUrl('ws://relay.example.com/nostr', ports).href, 'ws://relay.example.com/nostr');
  t.equal(parseRelayUrl('wss://relay.example.com:443', ports).href, 'wss://relay.example.com/');
  for (const bad of [
    '',
    'https://relay.example.com',
    'ftp://x',
    'wss://',
    'wss://u:p@relay.example.com',
    'wss://relay.example.com/#frag',
    'wss://[zz]',
  ])
    t.equal(await code(Promise.resolve().then(() => parseRelayUrl(bad, ports))), 'bad_relay_url', JSON.stringify(bad));
  t.equal(await code(Promise.resolve().then(() => parseRelayUrl('wss://relay.example.com:22', ports))), 'bad_port');
});

t.test('plan: modules, custom, dataset fee once per wallet', async (t) => {
  const p = config.pricing.labs;
  const plan = await labs.plan(
    { relay: relay.url, modules: ['quick', 'conformance'], checks: ['filter-ids', 'dns', 'no-such-check'] },
    ctx,
  );
  t.same(
    plan.items.map((i) => [i.key, i.price, !!i.oneTime]),
    [
      ['quick', p.quick, false],
      ['conformance', p.conformance, false],
      ['custom', Math.max(p.customMin, 2 * p.customPerCheck), false],
      ['dataset', p.dataset, true],
    ],
  );
  t.same(plan.items.find((i) => i.key === 'custom')?.task?.params.checks, ['filter-ids', 'dns'], 'unknown ids ignored');
  t.equal(plan.items.find((i) => i.key === 'dataset')?.task, undefined, 'the dataset fee has no task');
  t.equal(plan.target, '127.0.0.1');
  const quickOnly = await labs.plan({ relay: relay.url, modules: ['quick'] }, ctx);
  t.same(
    quickOnly.items.map((i) => i.key),
    ['quick'],
    'quick needs no dataset',
  );
  await ctx.datasetsKv.put('wallet-1', JSON.stringify({ at: Date.now() }));
  const again = await labs.plan({ relay: relay.url, modules: ['conformance'] }, ctx);
  t.same(
    again.items.map((i) => i.key),
    ['conformance'],
    'no second dataset fee',
  );
  t.equal(await code(labs.plan({ relay: relay.url, checks: ['no-such-check'] }, ctx)), 'no_checks');
  t.equal(await code(labs.plan({ relay: relay.url }, ctx)), 'no_checks');
  t.equal(await code(labs.plan({ relay: relay.url, modules: ['quick'], webhook: 'http://example.com/hook' }, ctx)), 'bad_webhook');
});

t.test('precheck: blocked, unreachable, bad webhook host, relay_busy', async (t) => {
  await fund(nc, ctx.walletId, 10_000);
  const body = { relay: relay.url, modules: ['quick' as const] };
  const plan = await labs.plan(body, ctx);
  const strict = { ...ctx, config: { ...config, outbound: { ...config.outbound, allowCidrs: [] } } };
  t.equal(await code(labs.precheck!(body, plan, strict)), 'blocked_address', 'loopback refused by default');
  t.equal(
    await code(
      labs.precheck!({ ...body, webhook: 'https://127.0.0.1:1/hook' }, plan, {
        ...strict,
        config: { ...strict.config, outbound: { ...strict.config.outbound, allowCidrs: ['127.0.0.1/32'] } },
      }),
    ),
    null,
    'webhook on an allowed address passes (not contacted)',
  );
  t.equal(await code(labs.precheck!({ ...body, webhook: 'https://10.1.2.3/hook' }, plan, ctx)), 'bad_webhook', 'private webhook host');
  const closed = { relay: `ws://127.0.0.1:${relay.port + 1 === 65536 ? 1 : relay.port + 1}/`, modules: ['quick' as const] };
  const cfgClosed = {
    ...ctx,
    config: { ...config, labs: { ...config.labs, allowedPorts: [...config.labs.allowedPorts, relay.port + 1] } },
  };
  t.equal(await code(labs.precheck!(closed, plan, cfgClosed)), 'unreachable');
  // relayTestsPerHour = 3, all customers together (one was used above)
  let busy: ApiError | null = null;
  for (let i = 0; i < 4 && !busy; i++) {
    await fund(nc, `other-${i}`, 10_000);
    try {
      await labs.precheck!(body, plan, { ...ctx, walletId: `other-${i}` });
    } catch (e) {
      busy = e as ApiError;
    }
  }
  t.equal(busy?.code, 'relay_busy');
  t.ok(Number(busy?.headers?.['Retry-After']) > 0, 'Retry-After set');
  t.equal(
    await code(labs.precheck!({ relay: relay.url.replace('127.0.0.1', 'localhost'), modules: ['quick'] }, plan, ctx)),
    null,
    'another relay address is counted separately',
  );
});
