// The example request of every operation of /openapi.json, in curl and with the typed client
// (`x-codeSamples`, which Scalar and Redoc show per operation). Built from the route declarations:
// method, path, parameters, auth and body come from the route itself; only the example values of a
// body are written here, and test/docs/openapi-samples.test.ts validates each against the route's
// body schema and compiles every client sample against the generated client types.
import type { TSchema } from '@sinclair/typebox';
import type { Route } from './route.ts';

const WEBSITEPRO = { url: 'https://example.com', outputs: ['metadata', 'markdown'] };
const SHOTS = { url: 'https://example.com', browsers: ['chromium', 'firefox'], viewports: ['fhd', 'phone'], schemes: ['light', 'dark'] };
const LABS = { relay: 'wss://relay.example.com', modules: ['quick'] };

/** Example bodies, by the body schema's `$id` (a service's quote and jobs share one) or `METHOD path`. */
export const BODY_EXAMPLES: Record<string, unknown> = {
  WebsiteproBody: WEBSITEPRO,
  ShotsBody: SHOTS,
  LabsBody: LABS,
  'POST /v1/topups': { eur: 5 },
};

/** Example values of path parameters (shown as placeholders to replace) and of query parameters. */
const PATH_EXAMPLES: Record<string, string> = { id: '<id>', key: '<key>', service: 'shots' };
const QUERY_EXAMPLES: Record<string, unknown> = { wait: 25 };

export function bodyExample(r: Route): unknown {
  if (!r.body) return undefined;
  const byId = r.body.$id ? BODY_EXAMPLES[r.body.$id] : undefined;
  return byId ?? BODY_EXAMPLES[`${r.method} ${r.path}`];
}

function queryExample(r: Route): Record<string, unknown> {
  const props = (r.query as { properties?: Record<string, TSchema> } | undefined)?.properties ?? {};
  return Object.fromEntries(Object.keys(props).flatMap((k) => (k in QUERY_EXAMPLES ? [[k, QUERY_EXAMPLES[k]]] : [])));
}

const pathParams = (r: Route) => [...r.path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
const sq = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

function curl(r: Route, baseUrl: string, body: unknown, query: Record<string, unknown>, stream: boolean, file: boolean): string {
  const path = r.path.replace(/:(\w+)/g, (_, n: string) => PATH_EXAMPLES[n] ?? `<${n}>`);
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)])).toString();
  const lines = [
    `curl${r.method === 'GET' ? '' : ` -X ${r.method}`}${stream ? ' -N' : ''}${file ? ' -OJ' : ''} ${sq(`${baseUrl}${path}${qs ? `?${qs}` : ''}`)}`,
  ];
  if (r.auth) lines.push(`-H "Authorization: Bearer $PAYLOADS_KEY"`);
  if (r.requestHeaders?.['Idempotency-Key']) lines.push(`-H "Idempotency-Key: $(uuidgen)"`);
  if (body !== undefined) lines.push(`-H 'Content-Type: application/json'`, `-d ${sq(JSON.stringify(body))}`);
  return lines.join(' \\\n  ');
}

/** A JSON value as a TypeScript literal: `{ url: "https://example.com", outputs: ["markdown"] }` (the examples hold no braces or commas in strings). */
const ts = (v: unknown) =>
  JSON.stringify(v)
    .replace(/"(\w+)":/g, '$1: ')
    .replace(/,/g, ', ')
    .replace(/\{/g, '{ ')
    .replace(/\}/g, ' }');

function client(r: Route, baseUrl: string, body: unknown, query: Record<string, unknown>): string {
  const params: string[] = [];
  const names = pathParams(r);
  if (names.length) params.push(`path: { ${names.map((n) => `${n}: ${JSON.stringify(PATH_EXAMPLES[n] ?? `<${n}>`)}`).join(', ')} }`);
  if (Object.keys(query).length) params.push(`query: ${ts(query)}`);
  const init: string[] = [];
  if (params.length) init.push(`params: { ${params.join(', ')} }`);
  if (body !== undefined) init.push(`body: ${ts(body)}`);
  const path = r.path.replace(/:(\w+)/g, '{$1}');
  return [
    `import { createPayloadsClient } from 'payloads-client';`,
    '',
    `const { api } = createPayloadsClient({ ${r.auth ? 'key: process.env.PAYLOADS_KEY, ' : ''}baseUrl: ${JSON.stringify(baseUrl)} });`,
    `const { data, error } = await api.${r.method}(${JSON.stringify(path)}${init.length ? `, { ${init.join(', ')} }` : ''});`,
    `console.log(error ?? data);`,
  ].join('\n');
}

/** `x-codeSamples` of one operation: curl and the typed client (payloads-client, openapi-fetch). */
export function codeSamples(r: Route, baseUrl: string): { lang: string; label: string; source: string }[] {
  const body = bodyExample(r);
  const query = queryExample(r);
  const types = Object.values(r.responses).map((d) => d.contentType ?? 'application/json');
  const stream = types.includes('text/event-stream');
  const file = r.path.includes('/results/') || r.path.endsWith('/zip');
  return [
    { lang: 'Shell', label: 'curl', source: curl(r, baseUrl, body, query, stream, file) },
    { lang: 'TypeScript', label: 'payloads-client', source: client(r, baseUrl, body, query) },
  ];
}
