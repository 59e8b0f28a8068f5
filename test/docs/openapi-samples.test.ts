// Every operation of /openapi.json has a description naming its error codes, and an example
// request in curl and with the typed client (x-codeSamples), generated from the route declarations:
// each example body passes the route's own body schema, and every client sample compiles against
// the generated client types (tsc), so a sample cannot drift from the API.
import t from 'tap';
import { mkdirSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { allRoutes } from '../../gateway/routes/index.ts';
import { createMetrics } from '../../gateway/metrics.ts';
import { buildOpenApi } from '../../gateway/openapi.ts';
import { bodyExample } from '../../gateway/openapi-samples.ts';
import { createValidatorCompiler } from '../../gateway/pipeline/validate.ts';
import { ERRORS } from '../../shared/errors.ts';
import { ROOT } from '../../shared/config/index.ts';

const routes = allRoutes({ metrics: createMetrics(), isReady: () => true });
const doc = buildOpenApi(routes, 'http://localhost:8080');
type Op = {
  description: string;
  responses: Record<string, { description: string }>;
  'x-codeSamples': { lang: string; label: string; source: string }[];
};
const ops = Object.entries(doc.paths).flatMap(([path, byMethod]) =>
  Object.entries(byMethod as Record<string, Op>).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })),
);

t.test('every operation: a description of its own, its errors with their codes, curl and client samples', async (t) => {
  t.ok(ops.length >= 20, `${ops.length} operations`);
  for (const r of routes.filter((r) => !r.hidden)) t.ok(r.description, `${r.method} ${r.path} declares a description`);
  for (const { name, op } of ops) {
    t.match(op.description, /\*\*Errors:\*\* /, `${name}: errors named in the description`);
    for (const [status, res] of Object.entries(op.responses).filter(([s]) => Number(s) >= 400)) {
      const codes = [...res.description.matchAll(/`(\w+)` \(/g)].map((m) => m[1]!);
      t.ok(codes.length, `${name} ${status}: its codes`);
      for (const c of codes) {
        t.equal(ERRORS[c as keyof typeof ERRORS]?.status, Number(status), `${name}: ${c} is a ${status}`);
        t.ok(op.description.includes(`/docs/errors#${c})`), `${name}: ${c} linked to the errors page`);
      }
    }
    const samples = op['x-codeSamples'];
    t.same(
      samples.map((s) => s.label),
      ['curl', 'payloads-client'],
      `${name}: curl and client samples`,
    );
    t.match(samples[0]!.source, /^curl /, `${name}: curl`);
  }
});

t.test('every example body passes its route schema', async (t) => {
  const compile = createValidatorCompiler();
  for (const r of routes.filter((r) => r.body && !r.hidden)) {
    const example = bodyExample(r);
    t.ok(example, `${r.method} ${r.path} has an example body`);
    const v = compile(r).body!;
    t.ok(v(structuredClone(example)), `${r.method} ${r.path}: ${JSON.stringify(v.errors ?? [])}`);
  }
});

t.test('every client sample compiles against the generated client types', async (t) => {
  // inside the project, so the samples resolve payloads-client from its node_modules
  mkdirSync(join(ROOT, 'test-output'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, 'test-output', 'samples-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const blocks = ops.map(({ name, op }) => {
    const src = op['x-codeSamples'].find((s) => s.label === 'payloads-client')!.source;
    t.match(src, /^import \{ createPayloadsClient \} from 'payloads-client';/);
    return `// ${name}\n{\n${src.replace(/^import .*\n/, '')}\n}`;
  });
  const file = join(dir, 'samples.ts');
  writeFileSync(file, `import { createPayloadsClient } from 'payloads-client';\n\n${blocks.join('\n\n')}\nexport {};\n`);
  const tsc = join(ROOT, 'node_modules', '.bin', 'tsc');
  const args = ['--noEmit', '--strict', '--skipLibCheck', '--target', 'es2023', '--module', 'nodenext', '--moduleResolution', 'nodenext'];
  args.push('--allowImportingTsExtensions', '--types', 'node', file);
  let out = '';
  try {
    execFileSync(tsc, args, { cwd: ROOT, encoding: 'utf8' });
  } catch (e) {
    out = String((e as { stdout?: string }).stdout ?? e);
  }
  t.equal(out, '', 'tsc finds no error in the samples');
});
