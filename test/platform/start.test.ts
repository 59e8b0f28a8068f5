// `npm start`'s program end to end: embedded nats-server, every actor, the gateway; Ctrl-C stops
// everything (the nats-server child included); a second start on the same data folder finds it all.
import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { tempDir } from '../helpers/nats.ts';
import { startMain, stopMain } from '../helpers/main-process.ts';
import { startNatsServer } from '../../shared/nats/server.ts';
import { connectNats } from '../../shared/nats/connect.ts';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
t.test('main.ts: starts everything, stops cleanly, restarts on the same data', async (t) => {
  const dataDir = tempDir('payloads-main-');
  const first = await startMain(dataDir);
  t.teardown(() => {
    first.child.kill('SIGKILL');
  });
  t.match(first.out(), /Account:\s+http:\/\/localhost:\d+\/account/);
  t.match(first.out(), /Errors:\s+http:\/\/localhost:\d+\/docs\/errors/);
  const ready = await fetch(`${first.api}/readyz`);
  t.equal(ready.status, 200, 'ready');
  const services = (await (await fetch(`${first.api}/v1/services`)).json()) as { services: { name: string; available: boolean }[] };
  t.same(
    services.services.map((s) => [s.name, s.available]),
    [
      ['websitepro', true],
      ['shots', true],
      ['labs', true],
    ],
    'every actor advertises',
  );

  const natsUrl = readFileSync(join(dataDir, 'nats.url'), 'utf8').trim();
  const portsFile = readdirSync(join(dataDir, 'nats', 'ports'))[0]!;
  const natsPid = Number(/_(\d+)\.ports$/.exec(portsFile)![1]);
  t.ok(alive(natsPid), `embedded nats-server runs (${natsUrl})`);
  const keyOut = await new Promise<string>((resolve, reject) => {
    const c = spawn(process.execPath, ['admin/main.ts', 'key', 'create'], {
      env: { ...process.env, DATA_DIR: dataDir, NATS_URL: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let o = '';
    c.stdout.on('data', (d) => (o += d));
    c.once('exit', (code) => (code === 0 ? resolve(o.trim()) : reject(new Error(`admin exited ${code}`))));
  });
  t.match(keyOut, /^pk_/, 'admin finds the embedded server through the data folder');
  t.equal((await fetch(`${first.api}/v1/balance`, { headers: { authorization: `Bearer ${keyOut}` } })).status, 200);

  t.equal(await stopMain(first.child), 0, 'SIGINT exits 0');
  await new Promise((r) => setTimeout(r, 300));
  t.notOk(alive(natsPid), 'the nats-server child is gone');

  // the store keeps the durable consumers and none of the units' KV watches and ordered reads,
  // which the next start would restore and count (fails when the stop leaves them: one per watch)
  const bare = await startNatsServer({ storeDir: join(dataDir, 'nats'), port: -1, serverName: 'payloads-embedded' });
  const nc = await connectNats(bare.url, 'start-test');
  const jsm = await jetstreamManager(nc);
  const left = { durable: [] as string[], ephemeral: [] as string[] };
  for await (const si of jsm.streams.list())
    for await (const c of jsm.consumers.list(si.config.name))
      (c.config.durable_name ? left.durable : left.ephemeral).push(`${si.config.name}/${c.name}`);
  await nc.close();
  await bare.stop();
  t.same(left.ephemeral, [], 'no ephemeral consumer left in the store');
  t.ok(left.durable.includes('JOBS/job-supervisor'), `the durable consumers stay (${left.durable.length})`);

  const second = await startMain(dataDir);
  t.teardown(() => {
    second.child.kill('SIGKILL');
  });
  const r = await fetch(`${second.api}/v1/balance`, { headers: { authorization: `Bearer ${keyOut}` } });
  t.equal(r.status, 200, 'the key made before the restart still works');
  t.equal(await stopMain(second.child), 0);
});
