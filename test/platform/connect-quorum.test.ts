// A connection whose server cannot reach JetStream's meta leader moves to another server within
// ~2 s, and to another one, not back to the server it is leaving (issue 45: nats.js's own choice on
// a process's first forced reconnect is the current server, so the move took a second round of
// checks, ~20 s). The server left is a plain nats-server without JetStream: its JetStream API has no
// responders, as a node cut off from its cluster's majority has no answer.
import t from 'tap';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { connectNats, type NatsConnection } from '../../shared/nats/connect.ts';
import { startTestNats } from '../helpers/nats.ts';

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

t.test('a connection leaves a server without JetStream for another within a few seconds', async (t) => {
  const withJs = await startTestNats(t);
  const port = await freePort();
  const plain = spawn(process.env.NATS_SERVER_BIN ?? 'nats-server', ['-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  t.teardown(() => plain.kill('SIGKILL'));
  const without = `127.0.0.1:${port}`;
  const url = `nats://${without},${withJs.server.url}`;
  // the client picks a server of its list at random: connect until it picked the one without JetStream
  let nc: NatsConnection | null = null;
  for (let i = 0; i < 40; i++) {
    const c = await connectNats(url, 'quorum-test').catch(async () => {
      await sleep(100); // the plain server still starting
      return null;
    });
    if (c?.getServer() === without) {
      nc = c;
      break;
    }
    await c?.close();
  }
  t.ok(nc, 'connected to the server without JetStream');
  t.teardown(() => nc?.close());
  const began = Date.now();
  while (nc!.getServer() === without && Date.now() - began < 15_000) await sleep(50);
  const movedMs = Date.now() - began;
  t.not(nc!.getServer(), without, `moved off it after ${movedMs} ms`);
  t.ok(movedMs < 5000, `within 5 s (${movedMs} ms; the check runs every second, two misses move it)`);
  await sleep(3000);
  t.not(nc!.getServer(), without, 'and did not come back to it');
});

t.test('a connection stays where it is when no other server has a quorum either (an election)', async (t) => {
  const ports = [await freePort(), await freePort()];
  const plains = ports.map((p) =>
    spawn(process.env.NATS_SERVER_BIN ?? 'nats-server', ['-a', '127.0.0.1', '-p', String(p)], { stdio: 'ignore' }),
  );
  t.teardown(() => {
    for (const p of plains) p.kill('SIGKILL');
  });
  const url = ports.map((p) => `nats://127.0.0.1:${p}`).join(',');
  let nc: NatsConnection | null = null;
  for (let i = 0; i < 40 && !nc; i++) nc = await connectNats(url, 'quorum-stay').catch(() => sleep(100).then(() => null));
  t.ok(nc, 'connected');
  t.teardown(() => nc?.close());
  const first = nc!.getServer();
  const moves: string[] = [];
  void (async () => {
    for await (const s of nc!.status()) if (s.type === 'reconnect') moves.push(nc!.getServer());
  })();
  // five rounds of two misses each: before, every round moved it to the other server
  await sleep(10_000);
  t.same(moves, [], 'never moved');
  t.equal(nc!.getServer(), first, 'still on the server it connected to');
});
