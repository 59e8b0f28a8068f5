import t from 'tap';
import SwaggerParser from '@apidevtools/swagger-parser';
import { startTestApp } from '../helpers/app.ts';
import { ERRORS } from '../../shared/errors.ts';

t.test('/openapi.json is a valid OpenAPI 3.1 document covering the spec', async (t) => {
  const app = await startTestApp(t);
  const r = await app.request('GET', '/openapi.json');
  t.equal(r.status, 200);
  const doc = r.json;
  t.equal(doc.openapi, '3.1.0');
  await t.resolves(SwaggerParser.validate(structuredClone(doc)), 'passes swagger-parser validation');
  const paths = Object.keys(doc.paths);
  const spec = [
    ['get', '/v1'],
    ['get', '/v1/pricing'],
    ['get', '/v1/services'],
    ['get', '/v1/services/{service}'],
    ['get', '/openapi.json'],
    ...['websitepro', 'shots', 'labs'].flatMap((s) => [
      ['post', `/v1/${s}/quote`],
      ['post', `/v1/${s}/jobs`],
    ]),
    ['get', '/v1/jobs'],
    ['get', '/v1/jobs/{id}'],
    ['get', '/v1/jobs/{id}/results/{key}'],
    ['get', '/v1/jobs/{id}/zip'],
    // issue 42: a page set's results, a page at a time
    ['get', '/v1/jobs/{id}/results'],
    // issue 18: the job's event stream
    ['get', '/v1/jobs/{id}/events'],
    ['get', '/v1/balance'],
    ['get', '/v1/transactions'],
    ['post', '/v1/topups'],
    ['get', '/v1/topups/{id}'],
    // issue 27 item 7: the key's Standard Webhooks signing secret
    ['get', '/v1/webhooks/secret'],
  ];
  for (const [m, p] of spec) t.ok(doc.paths[p!]?.[m!], `${m!.toUpperCase()} ${p}`);
  t.equal(paths.length, new Set(spec.map((x) => x[1])).size, 'no path beyond the spec');
  for (const [m, p] of spec) {
    const op = doc.paths[p!][m!];
    const isPublic = ['/v1', '/v1/pricing', '/v1/services', '/v1/services/{service}', '/openapi.json'].includes(p!);
    t.same(op.security, isPublic ? [] : [{ bearer: [] }], `${p} security`);
    if (!isPublic) t.ok(op.responses['401'], `${p} documents 401`);
  }
  const events = doc.paths['/v1/jobs/{id}/events'].get;
  t.ok(events.responses['200'].content['text/event-stream'], 'events: text/event-stream');
  t.ok(
    events.parameters.some((p: any) => p.in === 'header' && p.name === 'Last-Event-ID'),
    'events: Last-Event-ID documented',
  );
  t.equal(doc.components.schemas.ShotsBody.properties.options.properties.compare.type, 'boolean', 'shots options.compare documented');
  for (const b of ['WebsiteproBody', 'ShotsBody', 'LabsBody'])
    t.equal(doc.components.schemas[b].properties.webhook.type, 'string', `${b} webhook documented`);
  const create = doc.paths['/v1/shots/jobs'].post;
  for (const status of ['201', '400', '401', '402', '429', '503']) t.ok(create.responses[status], `shots jobs ${status}`);
  t.match(create.responses['400'].description, /unknown_browser/);
  t.match(create.responses['400'].description, /bad_viewport/);
  t.match(doc.paths['/v1/labs/jobs'].post.responses['429'].description, /relay_busy/);
  t.ok(create.requestBody.content['application/json'].schema, 'request body schema');
  t.same(doc.components.securitySchemes.bearer, {
    type: 'http',
    scheme: 'bearer',
    description: doc.components.securitySchemes.bearer.description,
  });
  for (const name of ['Error', 'Job', 'Result', 'Quote', 'Balance', 'Topup', 'PageMetadata', 'LabsReport'])
    t.ok(doc.components.schemas[name], `schema ${name}`);
  const codes = doc.components.schemas.Error.properties.error.properties.code.anyOf.map((x: any) => x.const);
  t.same(codes.sort(), Object.keys(ERRORS).sort(), 'every error code in the Error schema');
});
