// The compiled router answers exactly as the regex scan it replaced: same route, same parameters,
// same allowed methods, for generated paths over a route table shaped like the API's.
import t from 'tap';
import fc from 'fast-check';
import { compileRouter } from '../../../gateway/pipeline/router.ts';
import type { Method } from '../../../gateway/route.ts';

const table: { method: Method; path: string }[] = [
  { method: 'GET', path: '/v1' },
  { method: 'GET', path: '/v1/services' },
  { method: 'GET', path: '/v1/services/:service' },
  { method: 'POST', path: '/v1/shots/jobs' },
  { method: 'GET', path: '/v1/jobs' },
  { method: 'GET', path: '/v1/jobs/:id' },
  { method: 'DELETE', path: '/v1/jobs/:jobId' },
  { method: 'GET', path: '/v1/jobs/:id/results/:key' },
  { method: 'GET', path: '/v1/jobs/:id/zip' },
  { method: 'GET', path: '/v1/jobs/recent' }, // declared after a pattern that matches it: the pattern wins for GET
  { method: 'POST', path: '/v1/jobs/recent' },
  { method: 'GET', path: '/openapi.json' },
];
const router = compileRouter(table.map((r, i) => ({ ...r, target: i })));

// the old gateway's matching, kept here as the reference
const compiled = table.map((r, i) => {
  const names: string[] = [];
  const re = r.path.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:(\w+)/g, (_, n: string) => {
    names.push(n);
    return '([^/]+)';
  });
  return { i, method: r.method, pattern: new RegExp(`^${re}/?$`), names };
});
function reference(method: string, url: string) {
  const lookup = method === 'HEAD' ? 'GET' : method;
  const allowed = new Set<string>();
  let match: { target: number; params: Record<string, string> } | undefined;
  for (const c of compiled) {
    const m = c.pattern.exec(url);
    if (!m) continue;
    allowed.add(c.method);
    if (c.method !== lookup || match) continue;
    let params: Record<string, string>;
    try {
      params = Object.fromEntries(c.names.map((n, k) => [n, decodeURIComponent(m[k + 1]!)]));
    } catch {
      params = Object.fromEntries(c.names.map((n, k) => [n, m[k + 1]!]));
    }
    match = { target: c.i, params };
  }
  return { match, allowed: [...allowed] };
}

t.test('known paths', async (t) => {
  t.same(router.find('GET', '/v1/services'), { target: 1, params: {} });
  t.same(router.find('GET', '/v1/services/'), { target: 1, params: {} }, 'one trailing slash is ignored');
  t.equal(router.find('GET', '/v1/services//'), undefined, 'two are not');
  t.same(
    router.find('GET', '/v1/jobs/j1/results/a%2Fb.png'),
    { target: 7, params: { id: 'j1', key: 'a/b.png' } },
    'parameters are decoded one by one',
  );
  t.same(
    router.find('GET', '/v1/jobs/j1/results/%E0%A4%A'),
    { target: 7, params: { id: 'j1', key: '%E0%A4%A' } },
    'an undecodable one is left raw',
  );
  t.same(router.find('DELETE', '/v1/jobs/x'), { target: 6, params: { jobId: 'x' } });
  t.same(router.find('HEAD', '/openapi.json'), { target: 11, params: {} }, 'HEAD is answered by GET');
  t.same(router.find('GET', '/v1/jobs/recent'), { target: 5, params: { id: 'recent' } }, 'first declared wins');
  t.same(router.find('POST', '/v1/jobs/recent'), { target: 10, params: {} });
  t.same(router.allowed('/v1/jobs/recent'), ['GET', 'DELETE', 'POST']);
  t.equal(router.find('POST', '/v1/jobs/x'), undefined);
  t.same(router.allowed('/v1/jobs/x'), ['GET', 'DELETE']);
  t.same(router.allowed('/v1/nothing'), []);
  t.equal(router.find('GET', '/v1/jobs//zip'), undefined, 'a parameter is never empty');
});

t.test('same answers as the regex scan for generated paths', async (t) => {
  const segment = fc.oneof(
    fc.constantFrom('v1', 'jobs', 'services', 'shots', 'results', 'zip', 'recent', 'openapi.json', '', 'a%2Fb', '%E0%A4%A', 'x.y'),
    fc.webSegment(),
  );
  const url = fc.array(segment, { minLength: 1, maxLength: 6 }).map((s) => '/' + s.join('/'));
  fc.assert(
    fc.property(fc.constantFrom('GET', 'HEAD', 'POST', 'DELETE', 'PUT'), url, (method, u) => {
      const ref = reference(method, u);
      const got = router.find(method, u);
      t.same(got && { target: got.target, params: { ...got.params } }, ref.match, `${method} ${u}`);
      if (!got) t.same([...router.allowed(u)], ref.allowed, `allowed ${u}`);
    }),
    { numRuns: 2000 },
  );
});
