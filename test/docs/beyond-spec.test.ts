// docs/decisions.md's table "What we offer beyond the spec" names everything the API has that the
// contract (../shared/spec/api.md) does not: every route of the gateway, parameter, body field, answer
// field and error code (HTTP and result) that is not in the contract's lists below is in the table.
// The contract's lists are written out here, from the spec's sections 2, 3, 4 and 7.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { allRoutes } from '../../gateway/routes/index.ts';
import { createMetrics } from '../../gateway/metrics.ts';
import { buildOpenApi } from '../../gateway/openapi.ts';
import { ROOT } from '../../shared/config/index.ts';
import { ERRORS } from '../../shared/errors.ts';
import { RESULT_ERRORS } from '../../shared/result-errors.ts';

const SPEC = {
  // 4.1 to 4.4, and the three addresses of the introduction ({account_url}, {docs_url})
  routes: [
    'GET /v1',
    'GET /v1/pricing',
    'GET /v1/services',
    'GET /v1/services/{service}',
    'GET /openapi.json',
    'POST /v1/{service}/quote',
    'POST /v1/{service}/jobs',
    'GET /v1/jobs',
    'GET /v1/jobs/{id}',
    'GET /v1/jobs/{id}/results/{key}',
    'GET /v1/jobs/{id}/zip',
    'GET /v1/balance',
    'GET /v1/transactions',
    'POST /v1/topups',
    'GET /v1/topups/{id}',
    'GET /account',
    'GET /docs/errors',
  ],
  params: ['service', 'id', 'key', 'wait', 'limit', 'thumb', 'before'],
  bodies: {
    WebsiteproBody: ['url', 'outputs'],
    ShotsBody: ['url', 'browsers', 'viewports', 'schemes', 'options'],
    LabsBody: ['relay', 'modules', 'checks', 'webhook'],
  } as Record<string, string[]>,
  outputs: ['metadata', 'markdown', 'text', 'html', 'pdf'],
  shotsOptions: ['fullPage', 'retina', 'hideCookieBanner', 'delay'],
  answers: {
    Job: ['id', 'service', 'status', 'target', 'cost', 'refunded', 'charged', 'error', 'createdAt', 'finishedAt', 'expiresAt', 'results'],
    Result: ['key', 'status', 'price', 'refunded', 'error', 'url', 'contentType', 'bytes', 'filename', 'oneTime', 'progress'],
    Quote: ['service', 'target', 'cost', 'eur', 'balance', 'sufficient', 'items'],
    QuoteItem: ['key', 'price'],
    Balance: ['balance', 'unit', 'eur'],
    Topup: ['id', 'status', 'eur', 'eurCents', 'payloads', 'bonusPayloads', 'bolt11', 'sats', 'expiresAt'],
  } as Record<string, string[]>,
  // section 7, and the labs result errors of section 3
  errors: [
    'bad_request',
    'bad_url',
    'no_output',
    'unknown_browser',
    'bad_viewport',
    'bad_relay_url',
    'bad_port',
    'bad_webhook',
    'no_checks',
    'blocked_address',
    'unreachable',
    'unauthorized',
    'insufficient_funds',
    'not_found',
    'unknown_service',
    'not_ready',
    'expired',
    'rate_limited',
    'relay_busy',
    'service_unavailable',
    'busy',
    'not_a_relay',
    'write_restricted',
    'timeout',
    'worker_lost',
  ],
};

const decisions = readFileSync(join(ROOT, 'docs/decisions.md'), 'utf8');
const start = decisions.indexOf('\n## What we offer beyond the spec\n');
const table = decisions.slice(start, decisions.indexOf('\n## ', start + 1));
/** Every `code span` of the table's rows. */
const named = new Set(
  table
    .split('\n')
    .filter((l) => l.startsWith('| '))
    .flatMap((l) => [...l.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)),
);

const routes = allRoutes({ metrics: createMetrics(), isReady: () => true });
const doc = buildOpenApi(routes, 'http://localhost:8080') as {
  paths: Record<string, Record<string, { parameters?: { name: string }[] }>>;
  components: { schemas: Record<string, Schema> };
};
type Schema = { properties?: Record<string, Schema>; items?: Schema; anyOf?: Schema[]; const?: string };
const schemas = doc.components.schemas;
const props = (s: Schema | undefined) => Object.keys(s?.properties ?? {});
const missing = (have: string[], spec: string[]) => have.filter((x) => !spec.includes(x) && !named.has(x));

t.test('the table exists, after the introduction, with a link in every row', async (t) => {
  t.ok(start > 0, 'docs/decisions.md has "## What we offer beyond the spec"');
  const rows = table.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| what'));
  t.ok(rows.length >= 30, `${rows.length} rows`);
  for (const r of rows) t.match(r, /\]\([^)]+\) \|$/, `a link: ${r.slice(0, 60)}`);
});

t.test('every route the spec does not have is in the table', async (t) => {
  const spec = new Set(SPEC.routes.map((r) => r.replace('/v1/{service}/', '/v1/(websitepro|shots|labs)/')));
  const specRe = [...spec].map((r) => new RegExp(`^${r.replaceAll('{', '\\{').replaceAll('}', '\\}')}$`));
  const absent: string[] = [];
  for (const r of routes) {
    const path = r.path.replace(/:(\w+)/g, '{$1}');
    const name = `${r.method} ${path}`;
    if (specRe.some((re) => re.test(name))) continue;
    if (!named.has(name) && !named.has(path) && ![...named].some((n) => n.split(', ').includes(name))) absent.push(name);
  }
  t.same(absent, [], 'routes beyond the spec missing from the table');
});

t.test('every parameter, body field and answer field the spec does not have is in the table', async (t) => {
  const params = Object.values(doc.paths).flatMap((ops) => Object.values(ops).flatMap((op) => (op.parameters ?? []).map((p) => p.name)));
  t.same(missing([...new Set(params)], SPEC.params), [], 'parameters and headers');
  for (const [name, spec] of Object.entries(SPEC.bodies)) t.same(missing(props(schemas[name]), spec), [], `${name} fields`);
  const outputs = (schemas.WebsiteproBody!.properties!.outputs!.items!.anyOf ?? []).map((s) => s.const!);
  t.ok(outputs.length >= 5, 'the outputs are read from the schema');
  t.same(missing(outputs, SPEC.outputs), [], 'websitepro outputs');
  t.same(missing(props(schemas.ShotsBody!.properties!.options), SPEC.shotsOptions), [], 'shots options');
  const answers: Record<string, Schema | undefined> = { ...schemas, QuoteItem: schemas.Quote!.properties!.items!.items };
  for (const [name, spec] of Object.entries(SPEC.answers)) {
    t.ok(props(answers[name]).length >= spec.length, `${name} is read from the schema`);
    t.same(missing(props(answers[name]), spec), [], `${name} fields`);
  }
});

t.test('every error code the spec does not have, HTTP and result, is in the table', async (t) => {
  t.same(missing(Object.keys(ERRORS), SPEC.errors), [], 'HTTP error codes');
  t.same(missing(Object.keys(RESULT_ERRORS), SPEC.errors), [], 'result error codes');
});
