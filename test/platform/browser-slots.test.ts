// The suite runs four files at a time with three browser files at most (test/helpers/browser-slots.ts,
// taken in test/helpers/tap-children.ts). Checked with real processes: five holders of three slots
// never overlap by more than three and all get through; a slot left by a killed holder is taken back;
// this file's own process is not a browser file and the shots files are.
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tempDir } from '../helpers/nats.ts';
import { isBrowserFile, takeSlot } from '../helpers/browser-slots.ts';

const SLOTS = resolve(import.meta.dirname, '../helpers/browser-slots.ts');

/** A process that takes a slot, logs `take` and `give` around a hold, and exits. */
function holder(dir: string, log: string, holdMs: number) {
  const code = `import { takeSlot } from ${JSON.stringify(SLOTS)};
import { appendFileSync } from 'node:fs';
await takeSlot(${JSON.stringify(dir)}, 3, 20);
appendFileSync(${JSON.stringify(log)}, 'take\\n');
await new Promise((r) => setTimeout(r, ${holdMs}));
appendFileSync(${JSON.stringify(log)}, 'give\\n');`;
  const p = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: 'inherit' });
  return new Promise<number | null>((r) => p.on('exit', r));
}

t.test('five holders of three slots: never more than three at once, and every one gets through', async (t) => {
  const dir = join(tempDir('payloads-slots-'), 'slots');
  const log = join(tempDir('payloads-slots-log-'), 'log');
  writeFileSync(log, '');
  const codes = await Promise.all([300, 300, 300, 300, 300].map((ms) => holder(dir, log, ms)));
  t.same(codes, [0, 0, 0, 0, 0]);
  let held = 0;
  let most = 0;
  const events = readFileSync(log, 'utf8').trim().split('\n');
  for (const e of events) {
    held += e === 'take' ? 1 : -1;
    most = Math.max(most, held);
  }
  t.equal(events.length, 10, 'five takes, five gives');
  t.equal(most, 3, 'three at once at most, and three did run at once');
  t.notOk(existsSync(dir), 'the last one out removed the folder');
});

t.test('a slot whose holder died without giving it back is taken back', async (t) => {
  const dir = join(tempDir('payloads-slots-'), 'slots');
  mkdirSync(dir);
  const dead = spawnSync(process.execPath, ['-e', 'process.pid']).pid!;
  for (const i of [0, 1, 2]) appendFileSync(join(dir, `slot-${i}`), String(dead));
  const file = await Promise.race([takeSlot(dir, 3, 20), new Promise<null>((r) => setTimeout(() => r(null), 10_000).unref())]);
  t.ok(file, 'taken within 10 s');
  t.equal(readFileSync(file!, 'utf8'), String(process.pid), 'now held by this process');
});

t.test('which files run under a slot', async (t) => {
  t.notOk(isBrowserFile(process.argv[1]), 'this file is not a browser file');
  t.ok(isBrowserFile('/x/test/shots/pages.test.ts'));
  t.ok(isBrowserFile('test/shots/real-web-others.test.ts'));
  t.notOk(isBrowserFile('test/shots/fixtures.ts'), 'a helper is not a test file');
  t.notOk(isBrowserFile('test/security/browser-egress-chromium.test.ts'));
});
