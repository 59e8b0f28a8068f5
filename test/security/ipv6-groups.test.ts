// Issue 27 item 8: IPv6 clients are counted by network (/64 by default, server.ipv6PrefixLength) in
// every per-address limit. Before, each address had its own count, and one /64 holds 2^64 of them.
// The clients' addresses come through a trusted proxy on loopback (X-Forwarded-For), the only way a
// loopback-only test can speak from many IPv6 addresses.
import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { createClientAddress } from '../../gateway/pipeline/address.ts';
import { powBits } from '../../gateway/routes/account.ts';

const solve = (id: string, bits: number) => {
  for (let n = 0; ; n++) if (powBits(id, String(n)) >= bits) return String(n);
};

t.test('the group of an address', async (t) => {
  const of = (prefix: number) => createClientAddress({ trustedProxies: [], trustProxy: false, ipv6PrefixLength: prefix });
  t.equal(of(64)('2001:db8:1:2:aaaa:bbbb:cccc:dddd', undefined).group, '2001:db8:1:2::/64');
  t.equal(of(64)('2001:db8:1:2::1', undefined).group, of(64)('2001:db8:1:2:ffff::9', undefined).group);
  t.not(of(64)('2001:db8:1:2::1', undefined).group, of(64)('2001:db8:1:3::1', undefined).group);
  t.equal(of(48)('2001:db8:1:2::1', undefined).group, '2001:db8:1::/48', 'configurable');
  t.equal(of(128)('2001:db8:1:2::1', undefined).group, '2001:db8:1:2::1', '128: every address on its own');
  t.equal(of(64)('198.51.100.7', undefined).group, '198.51.100.7', 'IPv4 is counted per address');
  t.equal(of(64)('2001:db8:1:2::1', undefined).ip, '2001:db8:1:2::1', 'the address itself is kept for logs');
});

t.test('public requests: one limit for a whole /64', async (t) => {
  const app = await startTestApp(t, { config: { server: { trustedProxies: ['loopback'], publicRequestsPerMinute: 3 } } });
  const statuses: number[] = [];
  for (let i = 1; i <= 5; i++)
    statuses.push((await app.request('GET', '/v1/pricing', { headers: { 'x-forwarded-for': `2001:db8:5:6::${i.toString(16)}` } })).status);
  t.same(statuses, [200, 200, 200, 429, 429], 'five addresses of one /64 share three requests');
  t.equal(
    (await app.request('GET', '/v1/pricing', { headers: { 'x-forwarded-for': '2001:db8:5:7::1' } })).status,
    200,
    'the next /64 is another client',
  );
});

t.test('keys per address and day: one count for a whole /64', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet'],
    config: { wallet: { keyPowBits: 4, keysPerAddressPerDay: 2 }, server: { trustedProxies: ['loopback'] } },
  });
  const makeKey = async (ip: string) => {
    const h = { 'x-forwarded-for': ip };
    const ch = (await app.request('GET', '/account/challenge', { headers: h })).json;
    return (await app.request('POST', '/account/keys', { headers: h, body: { id: ch.id, nonce: solve(ch.id, ch.bits) } })).status;
  };
  t.same([await makeKey('2001:db8:9:9::1'), await makeKey('2001:db8:9:9::2'), await makeKey('2001:db8:9:9::3')], [201, 201, 429]);
  t.equal(await makeKey('2001:db8:9:a::1'), 201, 'another /64 still can');
});
