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
  for (const p of ['/v1', '/v1/pricing', '/v1/services', '/v1/services/{service}', '/openapi.json']) t.ok(paths.includes(p), p);
  t.same(doc.components.securitySchemes.bearer, { type: 'http', scheme: 'bearer', description: doc.components.securitySchemes.bearer.description });
  for (const name of ['Error', 'Job', 'Result', 'Quote', 'Balance', 'Topup']) t.ok(doc.components.schemas[name], `schema ${name}`);
  const codes = doc.components.schemas.Error.properties.error.properties.code.anyOf.map((x: any) => x.const);
  t.same(codes.sort(), Object.keys(ERRORS).sort(), 'every error code in the Error schema');
});
