// A cluster node whose route port is taken: nats-server is ready for clients, then ends on the route
// listener a moment later. Its start must fail with that reason (so the cluster start tries again on
// fresh ports), never hand back a node that is about to be gone: the cluster would form without it
// and refuse every replicated stream ("no suitable peers for placement").
import t from 'tap';
import net from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer } from '../../shared/nats/server.ts';

t.test('a route port already taken: the start fails with "address already in use"', async (t) => {
  const taken = net.createServer(() => {});
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => taken.close(() => r())));
  const port = (taken.address() as net.AddressInfo).port;
  const dir = mkdtempSync(join(tmpdir(), 'payloads-cluster-port-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (let i = 0; i < 5; i++) {
    const err = await startNatsServer({
      storeDir: join(dir, `n${i}`),
      serverName: `cp-${i}`,
      cluster: { name: 'cp', port, routes: ['nats-route://127.0.0.1:1'] },
    }).then(
      async (h) => {
        await h.destroy();
        return null;
      },
      (e: unknown) => e as Error,
    );
    t.ok(err, `start ${i + 1} failed`);
    t.match(err?.message ?? '', /address already in use/);
  }
});

t.test('a free route port: the node starts and listens for routes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'payloads-cluster-port-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  const h = await startNatsServer({
    storeDir: join(dir, 'n'),
    serverName: 'cp-ok',
    cluster: { name: 'cp', port, routes: ['nats-route://127.0.0.1:1'] },
  });
  t.teardown(() => h.destroy());
  t.equal(h.process.exitCode, null, 'running');
  const ok = await new Promise<boolean>((r) => {
    const c = net.connect(port, '127.0.0.1');
    c.once('connect', () => {
      c.destroy();
      r(true);
    });
    c.once('error', () => r(false));
  });
  t.ok(ok, 'the route port answers');
});
