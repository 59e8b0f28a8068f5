// wait() backs off between retries with a sleep that listens to the caller's AbortSignal; a sleep
// that ends normally must take its listener off again, or a long wait on one signal piles them up.
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getEventListeners } from 'node:events';
import { createPayloadsClient } from '../../client/src/index.ts';

t.test('wait(): no abort listener is left on the signal by the back-off sleeps', async (t) => {
  let calls = 0;
  const job = (status: string) => ({
    id: 'job_x',
    service: 'websitepro',
    status,
    target: 'example.com',
    cost: 20,
    refunded: 0,
    charged: 20,
    createdAt: 1,
    expiresAt: 2,
    results: [],
  });
  const server = createServer((req, res) => {
    calls++;
    res.setHeader('content-type', 'application/json');
    if (calls <= 3) {
      res.statusCode = 503;
      return res.end(JSON.stringify({ error: { code: 'service_unavailable', message: 'failing over' } }));
    }
    res.end(JSON.stringify({ job: job('completed'), balance: 0 }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => server.close(r)));
  const c = createPayloadsClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, key: 'pk_test' });
  const ac = new AbortController();
  const done = await c.wait('job_x', { signal: ac.signal });
  t.equal(done.status, 'completed');
  t.equal(calls, 4, 'three 503s waited out');
  // fetch (undici) ties each request to the signal with its own `abort` listener, dropped when the
  // request is collected: not ours, and not counted
  const left = getEventListeners(ac.signal, 'abort').filter((fn) => fn.name !== 'abort');
  t.equal(left.length, 0, `no back-off listener left behind: ${left.map(String).join(' | ').slice(0, 300)}`);
});
