// /openapi.json (OpenAPI 3.1), generated from the same route definitions and TypeBox schemas the
// gateway validates with: paths, bodies, query parameters, responses and every error code.
import type { TSchema } from '@sinclair/typebox';
import type { Route } from './route.ts';
import { ERRORS, ERRORS_PATH, type ErrorCode } from '../shared/errors.ts';
import { COMPONENTS } from '../shared/schemas/api.ts';
import { API_VERSION } from './route.ts';
import { PageMetadata } from '../shared/schemas/metadata.ts';
import { LabsReport } from '../shared/schemas/labs-report.ts';
import { codeSamples } from './openapi-samples.ts';

/** Documents inside result files: websitepro `metadata` and labs reports (`labs.report/1`). */
export const EXTRA_COMPONENTS: TSchema[] = [PageMetadata, LabsReport];

const REF = '#/components/schemas/';

/** TypeBox → plain JSON Schema for OpenAPI: drop symbols and $id, point bare refs at components. */
function clean(schema: unknown, top = true): unknown {
  if (Array.isArray(schema)) return schema.map((s) => clean(s, false));
  if (!schema || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === '$id' && top) continue;
    if (k === '$id') continue;
    if (k === '$ref' && typeof v === 'string' && !v.startsWith('#')) out[k] = REF + v;
    else out[k] = clean(v, false);
  }
  return out;
}

function schemaOrRef(s: TSchema): unknown {
  return s.$id ? { $ref: REF + s.$id } : clean(s);
}

/** The route's description, then every error code it can answer with, each linked to its entry on the errors page. */
function describe(r: Route, codes: ErrorCode[], baseUrl: string): string {
  const errors = [...codes]
    .sort((a, b) => ERRORS[a].status - ERRORS[b].status || a.localeCompare(b))
    .map((c) => `[\`${c}\`](${baseUrl}${ERRORS_PATH}#${c}) ${ERRORS[c].status}`);
  return `${r.description ?? r.summary}\n\n**Errors:** ${errors.join(', ')}.`;
}

export function buildOpenApi(routes: Route[], baseUrl: string) {
  const components: Record<string, unknown> = {};
  const addComponent = (s: TSchema) => {
    if (s.$id) components[s.$id] = clean(s);
  };
  [...COMPONENTS, ...EXTRA_COMPONENTS].forEach(addComponent);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes.filter((r) => !r.hidden)) {
    const path = r.path.replace(/:(\w+)/g, '{$1}');
    const params: unknown[] = [...r.path.matchAll(/:(\w+)/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    const q = r.query as { properties?: Record<string, TSchema>; required?: string[] } | undefined;
    for (const [name, s] of Object.entries(q?.properties ?? {})) {
      params.push({
        name,
        in: 'query',
        required: q?.required?.includes(name) ?? false,
        schema: clean(s),
        ...(s.description ? { description: s.description } : {}),
      });
    }
    for (const [name, description] of Object.entries(r.requestHeaders ?? {}))
      params.push({ name, in: 'header', required: false, description, schema: { type: 'string' } });
    const responses: Record<string, unknown> = {};
    for (const [status, doc] of Object.entries(r.responses)) {
      responses[status] = {
        description: doc.description,
        ...(doc.headers
          ? {
              headers: Object.fromEntries(Object.entries(doc.headers).map(([h, d]) => [h, { description: d, schema: { type: 'string' } }])),
            }
          : {}),
        ...(doc.schema || doc.contentType
          ? {
              content: {
                [doc.contentType ?? 'application/json']: {
                  schema: doc.schema ? schemaOrRef(doc.schema) : { type: 'string', format: 'binary' },
                },
              },
            }
          : {}),
      };
    }
    const codes = new Set<ErrorCode>(r.errors);
    if (r.auth) codes.add('unauthorized').add('rate_limited');
    if (r.body) codes.add('bad_request').add('payload_too_large').add('unsupported_media_type');
    if (r.query) codes.add('bad_request');
    codes.add('internal');
    const byStatus = new Map<number, ErrorCode[]>();
    for (const c of codes) byStatus.set(ERRORS[c].status, [...(byStatus.get(ERRORS[c].status) ?? []), c]);
    for (const [status, cs] of [...byStatus].sort((a, b) => a[0] - b[0])) {
      responses[String(status)] = {
        description: `Error. \`code\`: ${cs.map((c) => `\`${c}\` (${ERRORS[c].meaning})`).join('; ')}`,
        ...(cs.some((c) => ERRORS[c].retryable && status !== 500)
          ? { headers: { 'Retry-After': { description: 'Seconds to wait (429, 503)', schema: { type: 'string' } } } }
          : {}),
        content: {
          'application/json': { schema: { $ref: `${REF}Error` }, example: { error: { code: cs[0], message: ERRORS[cs[0]!].meaning } } },
        },
      };
    }
    if (r.body?.$id) addComponent(r.body);
    const op: Record<string, unknown> = {
      operationId: `${r.method.toLowerCase()}${path
        .replace(/[{}]/g, '')
        .split(/[/_-]/)
        .filter(Boolean)
        .map((p) => p[0]!.toUpperCase() + p.slice(1))
        .join('')}`,
      summary: r.summary,
      description: describe(r, [...codes], baseUrl),
      tags: r.tags,
      ...(params.length ? { parameters: params } : {}),
      ...(r.body ? { requestBody: { required: true, content: { 'application/json': { schema: schemaOrRef(r.body) } } } } : {}),
      responses,
      security: r.auth ? [{ bearer: [] }] : [],
      'x-codeSamples': codeSamples(r, baseUrl),
    };
    (paths[path] ??= {})[r.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Payloads API: screenshots, page conversion and Nostr relay tests',
      version: API_VERSION,
      description:
        `Prepaid job API. 10000 Payloads = 1 EUR. Make an API key and top it up on the [account page](${baseUrl}/account); ` +
        `send it as \`Authorization: Bearer <key>\`. Every error code, what it means and what to do: ${baseUrl}${ERRORS_PATH}`,
    },
    servers: [{ url: baseUrl }],
    paths,
    components: {
      schemas: components,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key made on the account page' } },
    },
  };
}

export function openapiRoute(routes: Route[]): Route {
  let cached: { base: string; body: string } | undefined;
  return {
    method: 'GET',
    path: '/openapi.json',
    auth: false,
    tags: ['public'],
    summary: 'This document (OpenAPI 3.1)',
    description:
      'The API described as OpenAPI 3.1, generated from the schemas the gateway validates with. The reference page `/docs` renders it; the typed client (`payloads-client`) is generated from it.',
    errors: ['rate_limited'],
    responses: { 200: { description: 'OpenAPI 3.1 document' } },
    handler: async (_req, ctx) => {
      if (cached?.base !== ctx.baseUrl)
        cached = { base: ctx.baseUrl, body: JSON.stringify(buildOpenApi([...routes, openapiRoute([])], ctx.baseUrl)) };
      return { body: cached.body, headers: { 'content-type': 'application/json', 'cache-control': 'public, max-age=60' } };
    },
  };
}
