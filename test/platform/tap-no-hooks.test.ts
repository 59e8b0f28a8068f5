// test/helpers/tap-no-hooks.mjs: preloaded through NODE_OPTIONS, it drops the module hooks of tap's
// processinfo and mock plugins (a hooks thread per test file on Node 22) and nothing else. Checked
// in a child started the way tap starts a test file, so it holds however this file is run.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');
// what a child reports: the loaders the preload dropped, and whether a hook of its own still works
const REPORT = `
import module from 'node:module';
module.register('data:text/javascript,' + encodeURIComponent(
  'export async function resolve(s, c, next) { return s === "virtual:probe" ? { url: "data:text/javascript,export default 42", shortCircuit: true } : next(s, c); }'));
const probe = (await import('virtual:probe')).default;
console.log(JSON.stringify({ skipped: globalThis[Symbol.for('payloads.tapHooksSkipped')] ?? null, probe }));
`;

t.test('a test file started as tap starts one loads neither processinfo’s nor mock’s module hooks; other hooks still work', async (t) => {
  // tap's --import flags for a test file are on this process's command line
  const tapImports = process.execArgv.filter((a) => a.startsWith('--import=') && a.includes('@tapjs/'));
  t.ok(
    tapImports.some((a) => a.includes('@tapjs/processinfo')),
    'tap put processinfo on the test’s command line',
  );
  const out = execFileSync(process.execPath, [...tapImports, '--input-type=module', '-e', REPORT], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '--import=./test/helpers/tap-no-hooks.mjs --no-warnings' },
  });
  const r = JSON.parse(out.trim().split('\n').at(-1)!);
  t.ok(Array.isArray(r.skipped), 'the preload ran before tap’s imports');
  t.ok(
    r.skipped.some((u: string) => u.includes('@tapjs/processinfo')),
    'processinfo’s loader dropped',
  );
  t.ok(
    r.skipped.some((u: string) => u.includes('@tapjs/mock')),
    'mock’s loader dropped',
  );
  t.equal(r.skipped.length, 2, 'and nothing else');
  t.equal(r.probe, 42, 'a module hook of anyone else is registered as usual');
});

t.test('every npm script that runs tap goes through scripts/tap.sh', async (t) => {
  const scripts: Record<string, string> = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts;
  const withTap = Object.entries(scripts).filter(([, cmd]) => /(^|[\s;&|])(npx )?tap(\s|$)|scripts\/tap\.sh/.test(cmd));
  t.ok(withTap.length >= 2, `found the test scripts (${withTap.map(([k]) => k).join(', ')})`);
  for (const [name, cmd] of withTap) t.match(cmd, /bash scripts\/tap\.sh/, `${name} runs tap through scripts/tap.sh`);
  t.match(readFileSync(join(ROOT, 'scripts/tap.sh'), 'utf8'), /--import=\.\/test\/helpers\/tap-no-hooks\.mjs/, 'which preloads the file');
});

t.test('no test uses tap’s module mocking (its loader is dropped)', async (t) => {
  const files = readdirSync(join(ROOT, 'test'), { recursive: true, encoding: 'utf8' }).filter(
    (f) => /\.(ts|mjs)$/.test(f) && !f.includes('node_modules'),
  );
  const users = files.filter(
    (f) =>
      /\.mock(Import|Require)\(|\.createMock\(/.test(readFileSync(join(ROOT, 'test', f), 'utf8')) && !f.endsWith('tap-no-hooks.test.ts'),
  );
  t.same(
    users,
    [],
    'test files calling t.mockImport/t.mockRequire/t.createMock: drop @tapjs/mock from test/helpers/tap-no-hooks.mjs first',
  );
});
