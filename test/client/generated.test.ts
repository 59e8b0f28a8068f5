// payloads-client is generated from /openapi.json: the committed document is what the running
// gateway serves, and the committed types are what openapi-typescript makes of it (run
// `npm run build` in client/ after changing a route or schema).
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../shared/config/index.ts';
import { startTestApp } from '../helpers/app.ts';
import { generate, localOpenApi, DEFAULT_BASE_URL } from '../../client/scripts/generate.ts';

t.test('client/openapi.json is the served /openapi.json', async (t) => {
  const app = await startTestApp(t);
  const served = (await app.request('GET', '/openapi.json')).json;
  const committed = JSON.parse(readFileSync(join(ROOT, 'client/openapi.json'), 'utf8'));
  t.same(committed.servers, [{ url: DEFAULT_BASE_URL }]);
  // the base URL is the only difference: the committed one names the CLI's default
  const rebase = (doc: any, base: string) => JSON.parse(JSON.stringify(doc).replaceAll(base, DEFAULT_BASE_URL));
  t.same(committed, rebase(served, app.url.replace('127.0.0.1', 'localhost')), 'run `npm run build` in client/ if this fails');
  t.ok(committed.paths['/v1/jobs/{id}/events'], 'the events endpoint is in it');
});

t.test('client/src/schema.ts is openapi-typescript of that document', async (t) => {
  const out = await generate(await localOpenApi());
  t.equal(readFileSync(join(ROOT, 'client/src/schema.ts'), 'utf8'), out.types, 'run `npm run build` in client/ if this fails');
  t.equal(readFileSync(join(ROOT, 'client/openapi.json'), 'utf8'), out.json);
});
