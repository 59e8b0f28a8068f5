// Crawl scope: origin, subdomains, path globs, depth; each refusal says why.
import t from 'tap';
import { compileScope } from '../../shared/crawl/scope.ts';

const reason = (v: { ok: boolean; reason?: string }) => (v.ok ? 'ok' : v.reason);

t.test('the origin is scheme, host and port', async (t) => {
  const s = compileScope({ start: 'https://example.com/docs/' });
  t.equal(s.origin, 'https://example.com');
  t.equal(reason(s.check('https://example.com/anything', 1)), 'ok');
  t.equal(reason(s.check('HTTPS://EXAMPLE.COM:443/x', 1)), 'ok');
  t.equal(reason(s.check('http://example.com/x', 1)), 'other_origin', 'scheme');
  t.equal(reason(s.check('https://example.com:8443/x', 1)), 'other_origin', 'port');
  t.equal(reason(s.check('https://docs.example.com/x', 1)), 'other_origin', 'subdomain without allowSubdomains');
  t.equal(reason(s.check('https://example.com.evil.net/x', 1)), 'other_origin');
  t.equal(reason(s.check('https://evilexample.com/x', 1)), 'other_origin');
  t.equal(reason(s.check('mailto:a@example.com', 1)), 'bad_url');
  t.equal(reason(s.check('::nonsense', 1)), 'bad_url');
});

t.test('allowSubdomains', async (t) => {
  const s = compileScope({ start: 'https://www.example.com/', allowSubdomains: true });
  t.equal(reason(s.check('https://docs.example.com/x', 1)), 'ok');
  t.equal(reason(s.check('https://a.b.example.com/x', 1)), 'ok');
  t.equal(reason(s.check('https://example.com/x', 1)), 'ok');
  t.equal(reason(s.check('https://evilexample.com/x', 1)), 'other_origin');
  t.equal(reason(s.check('http://docs.example.com/x', 1)), 'other_origin', 'same scheme still');
  t.equal(reason(s.check('https://docs.example.com:444/x', 1)), 'other_origin', 'same port still');
});

t.test('include and exclude globs', async (t) => {
  const s = compileScope({
    start: 'https://e.com/',
    includePaths: ['/docs/**', 'blog/*'],
    excludePaths: ['/docs/private/**', '**/*.pdf'],
  });
  t.equal(reason(s.check('https://e.com/', 0)), 'ok', 'the start URL is never excluded by a path rule');
  t.equal(reason(s.check('https://e.com/docs', 1)), 'ok');
  t.equal(reason(s.check('https://e.com/docs/a/b/c', 1)), 'ok');
  t.equal(reason(s.check('https://e.com/blog/post', 1)), 'ok', 'a glob without a leading slash');
  t.equal(reason(s.check('https://e.com/blog/a/b', 1)), 'excluded', '* is one segment');
  t.equal(reason(s.check('https://e.com/about', 1)), 'excluded', 'not included');
  t.equal(reason(s.check('https://e.com/docs/private/x', 1)), 'excluded', 'exclude wins');
  t.equal(reason(s.check('https://e.com/docs/manual.pdf', 1)), 'excluded');
  t.equal(reason(s.check('https://e.com/docs/.hidden', 1)), 'ok', 'dot files match');
  t.equal(reason(s.check('https://e.com/docs/x?q=1', 1)), 'ok', 'the query is not part of the path');
  const u = compileScope({ start: 'https://e.com/', includePaths: ['/blog/café/**'] });
  t.equal(reason(u.check('https://e.com/blog/caf%C3%A9/x', 1)), 'ok', 'globs see the decoded path');
});

t.test('depth', async (t) => {
  const s = compileScope({ start: 'https://e.com/', maxDepth: 2 });
  t.equal(reason(s.check('https://e.com/a', 2)), 'ok');
  t.equal(reason(s.check('https://e.com/a', 3)), 'depth');
  t.equal(reason(s.check('https://other.com/a', 3)), 'other_origin', 'origin reported first');
  const z = compileScope({ start: 'https://e.com/', maxDepth: 0 });
  t.equal(reason(z.check('https://e.com/', 0)), 'ok');
  t.equal(reason(z.check('https://e.com/a', 1)), 'depth');
});

t.test('bad globs are refused up front', async (t) => {
  t.throws(() => compileScope({ start: 'https://e.com/', includePaths: ['x'.repeat(300)] }), { name: 'ScopeRuleError' });
  t.throws(() => compileScope({ start: 'https://e.com/', excludePaths: [''] }), { name: 'ScopeRuleError' });
  t.throws(() => compileScope({ start: 'https://e.com/', excludePaths: Array(101).fill('/a') }), { name: 'ScopeRuleError' });
  // a pathological glob stays fast (picomatch compiles to a linear pattern)
  const s = compileScope({ start: 'https://e.com/', includePaths: ['/**/**/**/**/**/**/**/**/x'] });
  const t0 = performance.now();
  s.check(`https://e.com/${'a/'.repeat(2000)}y`, 1);
  t.ok(performance.now() - t0 < 500, 'no catastrophic backtracking');
});
