// The whole tree is formatted and passes the linter (biome.json): `npm test` and CI fail on an
// unformatted file or a lint error, so a review reads design, not whitespace.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const biome = join(dirname(createRequire(import.meta.url).resolve('@biomejs/biome/package.json')), 'bin', 'biome');
const run = (args: string[], cwd = root) => spawnSync(process.execPath, [biome, ...args], { cwd, encoding: 'utf8', timeout: 120_000 });

t.test('npm run lint: biome ci reports nothing over the whole tree', async (t) => {
  const r = run(['ci', '--colors=off', '.']);
  t.equal(r.status, 0, r.stdout.split('\n').slice(0, 40).join('\n') + r.stderr.slice(0, 2000));
});

t.test('the configuration catches what it is meant to: a floating promise, an unused import, an unformatted line', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'lint-'));
  const config = JSON.parse(spawnSync('cat', [join(root, 'biome.json')], { encoding: 'utf8' }).stdout);
  config.$schema = undefined;
  config.vcs = { enabled: false };
  config.files = { includes: ['**'] };
  writeFileSync(join(dir, 'biome.json'), JSON.stringify(config));
  writeFileSync(
    join(dir, 'bad.ts'),
    "import { readFileSync } from 'node:fs';\nasync function f(): Promise<number> { return 1; }\nexport function g() {\n  f();\n}\nexport const  x = 1\n",
  );
  const r = run(['ci', '--colors=off', '.'], dir);
  t.not(r.status, 0);
  const out = r.stdout + r.stderr;
  t.match(out, /noFloatingPromises/);
  t.match(out, /noUnusedImports/);
  t.match(out, /format/);
});
