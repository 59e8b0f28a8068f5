// The project refuses a nats-server too old to fsync before acknowledging (2.9, Debian 12's), and
// every server it starts is told to fsync each write unless a setting says otherwise.
import t from 'tap';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkNatsServerVersion, compareVersions, startNatsServer, NATS_SERVER_MIN } from '../../shared/nats/server.ts';
import { tempDir } from '../helpers/nats.ts';
import { loadConfig } from '../../shared/config/index.ts';

function fakeServer(version: string): string {
  const file = join(tempDir('payloads-fake-nats-'), 'nats-server');
  writeFileSync(file, `#!/bin/sh\necho "nats-server: v${version}"\n`);
  chmodSync(file, 0o755);
  return file;
}

t.test('the installed nats-server is new enough', async (t) => {
  const v = checkNatsServerVersion('nats-server');
  t.ok(compareVersions(v, NATS_SERVER_MIN) >= 0, `nats-server ${v} >= ${NATS_SERVER_MIN}`);
});

t.test('an older server is refused with a message that says why and what to do', async (t) => {
  const bin = fakeServer('2.9.10');
  await t.rejects(
    startNatsServer({ storeDir: tempDir('payloads-nats-'), port: -1, bin }),
    /2\.9\.10 .* older than 2\.10\.27.*fsync.*npm run setup/,
  );
  t.throws(() => checkNatsServerVersion(fakeServer('2.10.26')), /older than 2\.10\.27/);
  t.equal(compareVersions('2.10.27', '2.10.9'), 18, 'numeric, not text, comparison');
  t.ok(compareVersions('2.11.0', NATS_SERVER_MIN) > 0);
});

t.test('a missing binary is a clear error', async (t) => {
  t.throws(() => checkNatsServerVersion('/nonexistent/nats-server'), /could not be started.*npm run setup/);
});

t.test('sync_interval: always by default; another value only when asked', async (t) => {
  const a = await startNatsServer({ storeDir: tempDir('payloads-nats-'), port: -1 });
  t.teardown(() => a.destroy());
  t.match(readFileSync(join(a.storeDir, 'nats-server.conf'), 'utf8'), /sync_interval: always/);
  const b = await startNatsServer({ storeDir: tempDir('payloads-nats-'), port: -1, syncInterval: '2m' });
  t.teardown(() => b.destroy());
  t.match(readFileSync(join(b.storeDir, 'nats-server.conf'), 'utf8'), /sync_interval: 2m/);
});

t.test('the setting: always by default, durations allowed, anything else refused', async (t) => {
  t.equal(loadConfig({ env: {}, noDefaultFile: true }).nats.syncInterval, 'always');
  t.equal(loadConfig({ env: { NATS_SYNC_INTERVAL: '2m' }, noDefaultFile: true }).nats.syncInterval, '2m');
  t.throws(() => loadConfig({ env: { NATS_SYNC_INTERVAL: 'never' }, noDefaultFile: true }), /nats\.syncInterval/);
});
