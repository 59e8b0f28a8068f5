import t from 'tap';
import { readFileSync } from 'node:fs';
import { operationsWithTable, shape } from '../../scripts/endpoints-doc.ts';
import { SERVICE_APIS } from '../../shared/protocol/services.ts';
import { subjects } from '../../shared/names.ts';

t.test('docs/operations.md lists every service endpoint as declared', async (t) => {
  const doc = readFileSync('docs/operations.md', 'utf8');
  t.equal(doc, operationsWithTable(doc), 'run `node --import tsx scripts/endpoints-doc.ts --write` after changing an endpoint');
});

t.test('every subject of a request/reply service is declared, once', async (t) => {
  const declared = SERVICE_APIS.flatMap((a) => a.endpoints.map((e) => e.subject)).sort();
  const all = [...Object.values(subjects.wallet), ...Object.values(subjects.jobs), ...Object.values(subjects.browser)].sort();
  t.same(declared, all);
});

t.test('shapes read as the schema says', async (t) => {
  const e = SERVICE_APIS.flatMap((a) => a.endpoints).find((x) => x.subject === 'jobs.list')!;
  t.equal(shape(e.request as never), '{walletId: string, limit?: integer 1..100}');
});
