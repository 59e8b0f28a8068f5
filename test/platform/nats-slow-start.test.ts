// A nats-server slow to listen is waited for, not killed: after an unclean stop it rebuilds the
// state of the streams written last before it listens (4-7 s for 1 M job documents here, 14 s on a
// loaded machine), and the old fixed 15 s bound meant an embedded default with a few million job
// documents could never come back after a crash. A server that stays silent past the bound is still
// stopped, with the reason. The slow server here is the real one behind a wrapper that waits 2 s.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startNatsServer, START_TIMEOUT_MS } from '../../shared/nats/server.ts';
import { tempDir } from '../helpers/nats.ts';

// named nats-server: the server names its ports file after its binary, and exec keeps the pid
function slowServer(delaySeconds: number): string {
  const real = execFileSync('sh', ['-c', 'command -v nats-server'], { encoding: 'utf8' }).trim();
  const file = join(tempDir('payloads-slow-nats-'), 'nats-server');
  writeFileSync(file, `#!/bin/sh\n[ "$1" = --version ] && exec ${real} --version\nsleep ${delaySeconds}\nexec ${real} "$@"\n`);
  chmodSync(file, 0o755);
  return file;
}

t.test('the default bound is minutes, not seconds', async (t) => {
  t.ok(START_TIMEOUT_MS >= 5 * 60_000, `${START_TIMEOUT_MS / 1000} s`);
});

t.test('a server that listens after 2 s is waited for, and the wait is reported while it lasts', async (t) => {
  const slow: number[] = [];
  const t0 = Date.now();
  const server = await startNatsServer({
    storeDir: tempDir('payloads-nats-'),
    port: -1,
    bin: slowServer(2),
    startTimeoutMs: 30_000,
    slowEveryMs: 500,
    onSlowStart: (ms) => slow.push(ms),
  });
  t.teardown(() => server.destroy());
  t.ok(Date.now() - t0 >= 2000, `it took ${Date.now() - t0} ms`);
  t.ok(slow.length >= 2, `reported ${slow.length} times while waiting (${slow.join(', ')} ms)`);
  t.ok(
    slow.every((ms, i) => i === 0 || ms > slow[i - 1]!),
    'with the time waited so far',
  );
  t.match(server.url, /^nats:\/\/127\.0\.0\.1:\d+$/, 'and it is up');
});

t.test('one still silent past its bound is stopped, and the error says how long it was given', async (t) => {
  await t.rejects(
    startNatsServer({ storeDir: tempDir('payloads-nats-'), port: -1, bin: slowServer(3), startTimeoutMs: 1000 }),
    /nats-server did not start within 1 s/,
  );
});
