// The import rules (scripts/import-check.ts) hold for the code, and the check finds what breaks them.
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { importProblems } from '../../scripts/import-check.ts';
import { tempDir } from '../helpers/nats.ts';

t.test('actors/, gateway/, shared/, admin/: no cycle, shared/ imports nothing above it, folders entered through index.ts', async (t) => {
  t.same(importProblems(process.cwd()), [], 'run `node --import tsx scripts/import-check.ts`');
});

t.test('the check finds cycles (type-only too), folder loops, upward imports and imports around an index.ts', async (t) => {
  const root = tempDir('payloads-imports-');
  const files: Record<string, string> = {
    'gateway/routes/index.ts': "import type { X } from './ops.ts';\nexport type Deps = { x: X };",
    'gateway/routes/ops.ts': "import type { Deps } from './index.ts';\nexport type X = Deps;",
    'shared/a/one.ts': "export { b } from '../b/two.ts';",
    'shared/b/two.ts': "import { a } from '../a/three.ts';\nexport const b = a;",
    'shared/a/three.ts': 'export const a = 1;',
    'shared/up.ts': "// import { no } from '../gateway/commented.ts';\nconst m = await import('../actors/wallet/index.ts');",
    'actors/wallet/index.ts': "import { a } from '../../shared/a/three.ts';\nexport { a };",
    'shared/c/index.ts': "export { c } from './inner.ts';",
    'shared/c/inner.ts': 'export const c = 1;',
    'shared/c/deeper/use.ts': "import { c } from '../inner.ts';",
    'actors/x/index.ts': "import { c } from '../../shared/c/inner.ts';\nimport { c as d } from '../../shared/c/index.ts';",
  };
  for (const [f, src] of Object.entries(files)) {
    mkdirSync(dirname(join(root, f)), { recursive: true });
    writeFileSync(join(root, f), src);
  }
  t.same(importProblems(root).sort(), [
    'folder cycle: shared/a/ <-> shared/b/',
    'import cycle: gateway/routes/index.ts <-> gateway/routes/ops.ts',
    'imports around shared/c/index.ts: actors/x/index.ts -> shared/c/inner.ts',
    'shared/ imports upward: shared/up.ts -> actors/wallet/index.ts',
  ]);
});
