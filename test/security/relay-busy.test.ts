// Issue 27 item 4: relay_busy counts tests per relay (host and port), not per URL. Before, the
// counter's key held the path, so wss://relay/a1, /a2, ... each had their own 30 tests an hour.
import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { parseRelayUrl, relayCounterId } from '../../shared/services/labs.ts';
import { startMiniRelay } from '../labs/fixtures/mini-relay.ts';
import { fastLabs } from '../labs/fixtures/probe.ts';

const id = (raw: string) => relayCounterId(parseRelayUrl(raw, [80, 443, 7447]));

t.test('one counter for every spelling of a relay', async (t) => {
  const one = id('wss://relay.example.com/');
  for (const spelling of [
    'relay.example.com',
    'wss://RELAY.Example.com/a1',
    'wss://relay.example.com:443/a2?x=1',
    'wss://relay.example.com./',
    'WSS://relay.example.com.:443/deep/path',
  ]) {
    t.equal(id(spelling), one, spelling);
  }
  t.equal(id('wss://bücher.example/'), id('wss://xn--bcher-kva.example:443/x'), 'an IDN and its punycode');
  t.equal(id('ws://relay.example.com/'), id('ws://relay.example.com:80/y'), 'ws: default port 80');
  t.not(id('ws://relay.example.com/'), one, 'another port is another relay');
  t.not(id('wss://relay.example.com:7447/'), one);
  t.not(id('wss://other.example.com/'), one);
});

const relay = await startMiniRelay({});
t.teardown(() => relay.close());

t.test('other paths of one relay share its tests of the hour', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'relay-prober'],
    config: { labs: { ...fastLabs, allowedPorts: [relay.port], relayTestsPerHour: 2 } },
  });
  const { key, walletId } = await app.newKey();
  await wallet.grant(app.nc, walletId, 10_000, 'test');
  const statuses: string[] = [];
  for (const path of ['a1', 'a2', 'a3', 'A4']) {
    const r = await app.request('POST', '/v1/labs/jobs', {
      key,
      body: { relay: `ws://127.0.0.1.:${relay.port}/${path}`, modules: ['quick'] },
    });
    statuses.push(r.status === 429 ? r.json.error.code : String(r.status));
  }
  t.same(statuses, ['201', '201', 'relay_busy', 'relay_busy'], 'two tests of 127.0.0.1:port in the hour, whatever the path');
});
