// The clean-up after a stopped run is bounded; a connection that opens only after the bound has
// run out must still be closed (before, it was left open to the relay, and the deletion went on).
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { Probe } from '../../actors/relay-prober/probe.ts';
import { cleanupAfterStop } from '../../actors/relay-prober/checks/index.ts';
import { fastConfig } from './fixtures/probe.ts';

t.test('a clean-up connection that opens after the bound is closed, not left behind', async (t) => {
  // a relay slow to accept the WebSocket (600 ms), silent once connected
  const wss = new WebSocketServer({ noServer: true });
  let opened = 0;
  let closed = 0;
  const server = createServer((_req, res) => res.end('{}'));
  server.on('upgrade', (req, socket, head) => {
    setTimeout(
      () =>
        wss.handleUpgrade(req, socket, head, (ws) => {
          opened++;
          ws.on('close', () => closed++);
        }),
      600,
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(
    () =>
      new Promise((r) => {
        for (const c of wss.clients) c.terminate();
        wss.close();
        server.close(() => r(undefined));
      }),
  );

  const p = new Probe(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/`, fastConfig());
  const ev = p.sign({ kind: 1, content: 'a test note' });
  p.stored.set(ev.id, ev);
  p.stop();
  t.equal(await cleanupAfterStop(p, 150), null, 'the bound ran out before the relay accepted');
  for (let i = 0; i < 50 && !(opened >= 1 && closed === opened); i++) await new Promise((r) => setTimeout(r, 100));
  t.equal(opened, 1, 'the relay got the late connection');
  t.equal(closed, opened, 'and the prober closed it');
});
