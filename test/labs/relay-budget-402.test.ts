// The relay's hourly test budget (labs.relayTestsPerHour, all customers together) is spent only by
// jobs that can be paid: a key without the money gets its 402 without using one of the relay's
// tests, so it cannot make the relay `relay_busy` for everybody else.
import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { startMiniRelay } from './fixtures/mini-relay.ts';
import { fastLabs } from './fixtures/probe.ts';

const relay = await startMiniRelay({});
t.teardown(() => relay.close());

t.test("402s do not use up the relay's tests; a paying customer still gets one", async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'relay-prober'],
    config: { labs: { ...fastLabs, allowedPorts: [relay.port], relayTestsPerHour: 2 } },
  });
  const broke = await app.newKey();
  for (let i = 0; i < 3; i++) {
    const r = await app.request('POST', '/v1/labs/jobs', { key: broke.key, body: { relay: relay.url, modules: ['quick'] } });
    t.equal(r.status, 402, `attempt ${i + 1} without money: ${r.json?.error?.code}`);
    t.equal(r.json.error.code, 'insufficient_funds');
  }
  const paying = await app.newKey();
  await wallet.grant(app.nc, paying.walletId, 10_000, 'test');
  const ok = await app.request('POST', '/v1/labs/jobs', { key: paying.key, body: { relay: relay.url, modules: ['quick'] } });
  t.equal(ok.status, 201, ok.text);
  // the budget still counts paid jobs
  await app.request('POST', '/v1/labs/jobs', { key: paying.key, body: { relay: relay.url, modules: ['quick'] } });
  const busy = await app.request('POST', '/v1/labs/jobs', { key: paying.key, body: { relay: relay.url, modules: ['quick'] } });
  t.equal(busy.status, 429);
  t.equal(busy.json.error.code, 'relay_busy');
  t.equal((await wallet.balance(app.nc, broke.walletId)).balance, 0, 'nothing charged to the key without money');
});
