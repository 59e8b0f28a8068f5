// Issue 27 item 3: X-Forwarded-For is believed only as far as the operator's trusted proxies wrote
// it: the client is the right-most address not in `server.trustedProxies` (as Express's `trust
// proxy`). Before, the gateway took the first value, which the client writes itself, so every
// per-address limit could be dodged by sending a new first value each time.
import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { createClientAddress } from '../../gateway/pipeline/address.ts';

const server = (trustedProxies: string[], trustProxy = false) => ({ trustedProxies, trustProxy, ipv6PrefixLength: 64 });

t.test('the client is the right-most address no trusted proxy stands for', async (t) => {
  const of = createClientAddress(server(['10.0.0.0/8', '192.0.2.7']));
  t.equal(of('10.1.2.3', '6.6.6.6, 198.51.100.9').ip, '198.51.100.9', 'what the client wrote (left) is ignored');
  t.equal(
    of('10.1.2.3', '6.6.6.6, 198.51.100.9, 192.0.2.7, 10.9.9.9').ip,
    '198.51.100.9',
    'a chain of trusted proxies is walked from the right',
  );
  t.equal(of('203.0.113.5', '198.51.100.9').ip, '203.0.113.5', 'a peer that is no trusted proxy: its header is ignored');
  t.equal(of('10.1.2.3', undefined).ip, '10.1.2.3', 'a trusted proxy that sent no header is the client');
  t.equal(of('10.1.2.3', '10.4.4.4, 10.5.5.5').ip, '10.4.4.4', 'every hop trusted: the left-most one');
  t.equal(of('10.1.2.3', 'garbage, 198.51.100.9').ip, '198.51.100.9');
  t.equal(of('10.1.2.3', '198.51.100.9, garbage').ip, '10.1.2.3', 'an unreadable hop from the proxy itself: stop at the last address read');
  t.equal(of('::ffff:10.1.2.3', '198.51.100.9').ip, '198.51.100.9', 'an IPv4-mapped peer is its IPv4 address');
  t.equal(of('10.1.2.3', '[2001:db8::1]:443').ip, '2001:db8::1', 'bracketed IPv6 with a port');
  t.equal(createClientAddress(server([]))('10.1.2.3', '198.51.100.9').ip, '10.1.2.3', 'no trusted proxies: the header is never read');
  t.equal(
    createClientAddress(server([], true))('127.0.0.1', '6.6.6.6, 198.51.100.9').ip,
    '198.51.100.9',
    'trustProxy: true means a proxy on loopback',
  );
  t.throws(() => createClientAddress(server(['not-an-address'])), /trustedProxies/);
});

t.test('a client behind the proxy cannot choose its address: per-address limits hold', async (t) => {
  const app = await startTestApp(t, { config: { server: { trustedProxies: ['loopback'], publicRequestsPerMinute: 3 } } });
  const statuses: number[] = [];
  // the proxy (this test, on loopback) appends the address it saw; the client prepends whatever it likes
  for (let i = 0; i < 5; i++)
    statuses.push(
      (await app.request('GET', '/v1/pricing', { headers: { 'x-forwarded-for': `203.0.113.${i + 1}, 198.51.100.77` } })).status,
    );
  t.same(statuses, [200, 200, 200, 429, 429], 'a new first X-Forwarded-For value each time does not help');
  t.equal(
    (await app.request('GET', '/v1/pricing', { headers: { 'x-forwarded-for': '198.51.100.78' } })).status,
    200,
    'another client behind the proxy has its own limit',
  );
});

t.test('without a trusted proxy X-Forwarded-For is ignored', async (t) => {
  const app = await startTestApp(t, { config: { server: { publicRequestsPerMinute: 2 } } });
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++)
    statuses.push((await app.request('GET', '/v1/pricing', { headers: { 'x-forwarded-for': `198.51.100.${i + 1}` } })).status);
  t.same(statuses, [200, 200, 429]);
});
