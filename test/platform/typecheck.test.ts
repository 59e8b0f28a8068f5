// The whole project type-checks (tsc --noEmit over tsconfig.json): `npm test` and CI catch a type
// error even in a file no test imports (tests run through tsx/ts-node, which strip types unchecked).
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

t.test('tsc --noEmit reports no error', async (t) => {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const r = spawnSync(process.execPath, [tsc, '--noEmit', '-p', join(root, 'tsconfig.json')], {
    cwd: root,
    encoding: 'utf8',
    timeout: 240_000,
  });
  t.equal(r.status, 0, `tsc exited ${r.status}${r.signal ? ` (${r.signal})` : ''}`);
  t.equal(r.stdout.trim(), '', r.stdout.split('\n').slice(0, 30).join('\n') || 'no diagnostics');
});
