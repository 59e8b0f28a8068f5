// The pure pipeline steps on their own: CORS headers, query and body parsing, validation, the
// error mapping of the handle step, the rate-limit choice per route.
import t from 'tap';
import { Type as T } from '@sinclair/typebox';
import { commonHeaders, preflightHeaders } from '../../../gateway/pipeline/cors.ts';
import { parseQuery, parseJsonBody, declaredTooLarge } from '../../../gateway/pipeline/parse.ts';
import { createValidatorCompiler, validateQuery, validateBody } from '../../../gateway/pipeline/validate.ts';
import { asApiError } from '../../../gateway/pipeline/handle.ts';
import { rateLimitOf } from '../../../gateway/pipeline/limit.ts';
import { ApiError } from '../../../shared/errors.ts';
import { testLog } from '../../helpers/nats.ts';

const codeOf = (f: () => unknown) => {
  try {
    f();
    return 'none';
  } catch (e) {
    return e instanceof ApiError ? e.code : String(e);
  }
};

t.test('cors', async (t) => {
  const c = commonHeaders('r1');
  t.same(c, {
    'x-request-id': 'r1',
    'access-control-allow-origin': '*',
    'access-control-expose-headers': 'x-request-id, retry-after, content-disposition, idempotent-replayed, server-timing',
  });
  const p = preflightHeaders(c, ['GET', 'POST']);
  t.equal(p.allow, 'GET, POST, OPTIONS');
  t.equal(p['access-control-allow-methods'], 'GET, POST, OPTIONS');
  t.match(p['access-control-allow-headers'], /authorization/);
  t.equal(p['x-request-id'], 'r1', 'keeps the common headers');
});

t.test('parse', async (t) => {
  t.same(parseQuery('a=1&b=x&a=2'), { a: '1', b: 'x' }, 'first value wins');
  t.same(parseQuery(''), {});
  t.equal(declaredTooLarge('100', 99), 'the body is 100 bytes; at most 99 are accepted');
  t.equal(declaredTooLarge('99', 99), undefined);
  t.equal(declaredTooLarge(undefined, 99), undefined);
  t.same(parseJsonBody(Buffer.from('{"a":1}'), 'application/json; charset=utf-8'), { a: 1 });
  t.same(parseJsonBody(Buffer.from('[1]'), 'application/problem+json'), [1]);
  t.same(parseJsonBody(Buffer.from('1'), undefined), 1, 'no content type is taken as JSON');
  t.equal(
    codeOf(() => parseJsonBody(null, 'application/json')),
    'bad_request',
  );
  t.equal(
    codeOf(() => parseJsonBody(Buffer.from('{'), 'application/json')),
    'bad_request',
  );
  t.equal(
    codeOf(() => parseJsonBody(Buffer.from('a=1'), 'application/x-www-form-urlencoded')),
    'unsupported_media_type',
  );
});

t.test('validate', async (t) => {
  const compile = createValidatorCompiler();
  const v = compile({
    query: T.Object({ limit: T.Optional(T.Integer({ minimum: 1, default: 30 })), n: T.Optional(T.Number()) }),
    body: T.Object({ url: T.String(), outputs: T.Array(T.String(), { minItems: 1 }) }, { additionalProperties: false }),
  });
  t.same(validateQuery(v.query!, { limit: '5' }), { limit: 5 }, 'coerced');
  t.same(validateQuery(v.query!, {}), { limit: 30 }, 'default applied');
  t.throws(() => validateQuery(v.query!, { limit: '0' }), { code: 'bad_request', message: /^query: limit must be >= 1/ });
  t.throws(() => validateQuery(v.query!, { n: 'Infinity' }), { code: 'bad_request', message: 'query: n must be a finite number' });
  t.same(validateBody(v.body!, { url: 'u', outputs: ['a'] }), { url: 'u', outputs: ['a'] });
  t.throws(() => validateBody(v.body!, { outputs: ['a'] }), { code: 'bad_request', message: 'url is required' });
  t.throws(() => validateBody(v.body!, { url: 1, outputs: ['a'] }), { code: 'bad_request', message: 'url must be string' });
  t.throws(() => validateBody(v.body!, { url: 'u', outputs: ['a'], x: 1 }), { message: 'body has an unknown field x' });
  t.throws(
    () => validateBody(v.body!, { url: 'u', outputs: [] }, (e) => (e.instancePath === '/outputs' ? 'no_output' : 'bad_request')),
    { code: 'no_output' },
    'the route maps its violations',
  );
  t.same(compile({}), {}, 'no schemas, no validators');
});

t.test('handle: errors become the API error', async (t) => {
  const log = testLog();
  const own = new ApiError('bad_url', 'x');
  t.equal(asApiError(own, log, 'r', '/p'), own, 'an ApiError as it is');
  // the client's own error shapes for a request nobody answered (wrapped, as the client does)
  const timeout = Object.assign(new Error('timeout'), { name: 'TimeoutError' });
  const transient = asApiError(new Error('request failed', { cause: timeout }), log, 'r', '/p');
  t.equal(transient.code, 'service_unavailable');
  t.equal(transient.headers?.['retry-after'], '2');
  const internal = asApiError(new Error('secret internals'), log, 'r', '/p');
  t.equal(internal.code, 'internal');
  t.notMatch(internal.message, /secret/);
});

t.test('rate limit per route', async (t) => {
  const r = { method: 'GET' as const, path: '/x' };
  t.equal(rateLimitOf({ ...r, auth: true }), 'key');
  t.equal(rateLimitOf({ ...r, auth: false }), 'address');
  t.equal(rateLimitOf({ ...r, auth: false, rateLimit: 'none' }), 'none');
  t.equal(rateLimitOf({ ...r, auth: true, rateLimit: 'jobs' }), 'jobs');
  t.throws(
    () => rateLimitOf({ ...r, auth: false, rateLimit: 'jobs' }),
    /needs auth/,
    'a keyed limit on a public route is refused at start',
  );
});
