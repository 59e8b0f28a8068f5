// uniqueKey: every spelling of one page folds to one key; two pages never fold together.
import t from 'tap';
import { canonicalOf, isTrackingParam, uniqueKey } from '../../shared/crawl/normalize.ts';

t.test('spellings of one page fold', async (t) => {
  const same = [
    'https://example.com/docs/intro',
    'HTTPS://EXAMPLE.COM/docs/intro',
    'https://example.com:443/docs/intro',
    'https://example.com./docs/intro',
    'https://example.com/docs/intro/',
    'https://example.com/docs/intro#section-2',
    'https://example.com/docs/intro?utm_source=x&utm_medium=y',
    'https://example.com/docs/intro?gclid=abc&fbclid=def&mc_cid=1&mc_eid=2',
    'https://example.com/docs/./intro',
    'https://example.com/docs/x/../intro',
    'https://example.com/%64ocs/intro',
    'https://user:pw@example.com/docs/intro',
  ];
  for (const s of same) t.equal(uniqueKey(s), 'https://example.com/docs/intro', s);
  t.equal(uniqueKey('http://example.com:80/'), 'http://example.com/');
  t.equal(uniqueKey('http://example.com'), 'http://example.com/');
  t.equal(uniqueKey('http://example.com:8080/a/'), 'http://example.com:8080/a');
});

t.test('query parameters sorted, escapes normalised', async (t) => {
  t.equal(uniqueKey('https://e.com/s?b=2&a=1'), 'https://e.com/s?a=1&b=2');
  t.equal(uniqueKey('https://e.com/s?a=2&b=1&a=1'), 'https://e.com/s?a=2&a=1&b=1', 'repeated names keep their order');
  t.equal(uniqueKey('https://e.com/s?q=a%2fb'), 'https://e.com/s?q=a%2Fb');
  t.equal(uniqueKey('https://e.com/s?q=%7euser'), 'https://e.com/s?q=~user');
  t.equal(uniqueKey('https://e.com/s?'), 'https://e.com/s');
  t.equal(uniqueKey('https://e.com/s?&&a=1&'), 'https://e.com/s?a=1');
  t.equal(uniqueKey('https://e.com/s?UTM_SOURCE=x&a=1'), 'https://e.com/s?a=1');
  t.equal(uniqueKey('https://e.com/caf%c3%a9'), 'https://e.com/caf%C3%A9');
  t.equal(uniqueKey('https://e.com/café'), 'https://e.com/caf%C3%A9');
});

t.test('different pages stay apart', async (t) => {
  t.not(uniqueKey('https://e.com/a'), uniqueKey('http://e.com/a'), 'scheme');
  t.not(uniqueKey('https://e.com/a'), uniqueKey('https://e.com:8443/a'), 'port');
  t.not(uniqueKey('https://e.com/A'), uniqueKey('https://e.com/a'), 'path case');
  t.not(uniqueKey('https://e.com/a?ref=main'), uniqueKey('https://e.com/a?ref=dev'), 'ref is kept');
  t.not(uniqueKey('https://e.com/a?q=1'), uniqueKey('https://e.com/a?q=2'));
  t.not(uniqueKey('https://e.com/a%2Fb'), uniqueKey('https://e.com/a/b'), 'an escaped slash is not a slash');
  t.equal(uniqueKey('https://e.com/'), 'https://e.com/', 'the root keeps its slash');
});

t.test('not http(s)', async (t) => {
  t.equal(uniqueKey('mailto:a@e.com'), null);
  t.equal(uniqueKey('javascript:alert(1)'), null);
  t.equal(uniqueKey('ftp://e.com/'), null);
  t.equal(uniqueKey('not a url'), null);
  t.equal(uniqueKey('/relative', 'https://e.com/x/'), 'https://e.com/relative');
  t.ok(isTrackingParam('utm_campaign'));
  t.notOk(isTrackingParam('page'));
});

t.test('rel=canonical on the same origin only', async (t) => {
  t.equal(canonicalOf('https://e.com/a?sort=1', '/a'), 'https://e.com/a');
  t.equal(canonicalOf('https://e.com/a', 'https://e.com/b/#x'), 'https://e.com/b');
  t.equal(canonicalOf('https://e.com/a', 'https://other.com/a'), null, 'another origin');
  t.equal(canonicalOf('https://e.com/a', 'http://e.com/a'), null, 'another scheme');
  t.equal(canonicalOf('https://e.com/a', ''), null);
  t.equal(canonicalOf('https://e.com/a', null), null);
  t.equal(canonicalOf('https://e.com/a', 'http://[bad'), null);
});
