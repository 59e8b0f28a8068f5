// shared/nats/request-settled.ts on a real nats-server: an answered request still resolves, a
// request nobody answers still rejects (no responders, timeout), and every one of them leaves the
// connection's table of open requests, the patch's way of ending them (the library's table would
// grow without a bound if it did not).
import t from 'tap';
import { connectNats } from '../../shared/nats/connect.ts';
import { startTestNats } from '../helpers/nats.ts';

const openRequests = (nc: unknown) => (nc as { protocol: { muxSubscriptions: { size(): number } } }).protocol.muxSubscriptions.size();

t.test('requests end as before and leave no open request behind', async (t) => {
  const nats = await startTestNats(t);
  const nc = await connectNats(nats.server.url, 'settled');
  t.teardown(() => nc.close());
  const sub = nats.nc.subscribe('echo', { callback: (_e, m) => void m.respond(m.data) });
  nats.nc.subscribe('silent', { callback: () => {} });
  await nats.nc.flush();
  const answers = await Promise.all(Array.from({ length: 300 }, (_, i) => nc.request('echo', String(i), { timeout: 5000 })));
  t.same(
    answers.map((m) => m.string()),
    Array.from({ length: 300 }, (_, i) => String(i)),
    'every answer to its own request',
  );
  t.equal(openRequests(nc), 0, 'answered requests are gone from the table');
  await t.rejects(nc.request('nobody.here', 'x', { timeout: 2000 }), /no responders/i, 'no responders still rejects');
  await t.rejects(nc.request('silent', 'x', { timeout: 200 }), /timeout/i, 'a request never answered still times out');
  t.equal(openRequests(nc), 0, 'failed requests are gone too');
  sub.unsubscribe();
});
