// Issue 27 item 6: a failed check at job creation costs nothing, so it must not be a free oracle.
// `blocked_address` no longer echoes what a name resolved to inside our network (before: "x resolves
// to a non-public address: 10.1.2.3 is in a special-purpose IPv4 range"), and the reachability check
// (a lookup and a TCP connect, answered for free) is bounded per key and per target.
import t from 'tap';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { precheckTarget } from '../../shared/outbound/check.ts';
import { resolvePinned } from '../../shared/outbound/resolve.ts';
import { testConfig } from '../helpers/nats.ts';
import { startJobsApi } from '../jobs/app.ts';

t.test('blocked_address says a name is not public, never which internal address it has', async (t) => {
  const config = testConfig({ outbound: { allowCidrs: [] } });
  for (const address of ['10.1.2.3', '169.254.169.254', '192.168.77.5', 'fd00::1234', '127.0.0.9']) {
    const resolver = async () => [{ address, family: address.includes(':') ? 6 : 4 }];
    const err = await precheckTarget('http://intranet-name.example.com/', config, resolver).then(
      () => null,
      (e: { code: string; message: string; details?: unknown }) => e,
    );
    t.equal(err?.code, 'blocked_address', address);
    t.notMatch(err?.message, address, `the message does not name ${address}`);
    t.notMatch(JSON.stringify((err as { details?: unknown })?.details ?? {}), address, 'nor do the details a client sees');
    t.match(err?.message, /intranet-name\.example\.com resolves to an address that is not public/);
  }
  // the guard's own error keeps it, for our logs
  const inner = await resolvePinned('intranet-name.example.com', {
    allowCidrs: [],
    resolver: async () => [{ address: '10.1.2.3', family: 4 }],
  }).catch((e) => e);
  t.equal(inner.details.address, '10.1.2.3');
});

t.test('reachability checks are bounded per key and per target', async (t) => {
  const s = await startJobsApi(t, { outbound: { checksPerKeyPerMinute: 3, checksPerTargetPerMinute: 5 } }, { workers: false });
  // a closed port this test bound and released itself
  const closedPort = await new Promise<number>((r) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const p = (srv.address() as AddressInfo).port;
      srv.close(() => r(p));
    });
  });
  const closed = `http://127.0.0.1:${closedPort}/`;
  const a = await s.newWallet(1000);
  const codes: string[] = [];
  for (let i = 0; i < 5; i++)
    codes.push(
      (await s.request('POST', '/v1/websitepro/jobs', { key: a.key, body: { url: closed, outputs: ['metadata'] } })).json.error.code,
    );
  t.same(codes, ['unreachable', 'unreachable', 'unreachable', 'rate_limited', 'rate_limited'], 'a key learns at most 3 answers a minute');
  const b = await s.newWallet(1000);
  const c = await s.newWallet(1000);
  const perTarget: string[] = [];
  for (const k of [b, c, b, c])
    perTarget.push(
      (await s.request('POST', '/v1/websitepro/jobs', { key: k.key, body: { url: closed, outputs: ['metadata'] } })).json.error.code,
    );
  t.same(
    perTarget,
    ['unreachable', 'unreachable', 'rate_limited', 'rate_limited'],
    'the target was checked 5 times this minute, by any key',
  );
  const other = await s.request('POST', '/v1/websitepro/jobs', { key: b.key, body: { url: s.targetUrl, outputs: ['metadata'] } });
  t.equal(other.status, 201, 'another target is still checked for that key');
  t.equal(await s.balance(a.walletId), 1000, 'nothing charged for the checks');
});
