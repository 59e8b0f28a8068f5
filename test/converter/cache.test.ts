// The fetch cache's own rules (actors/converter/cache.ts) with a real nats-server and a local HTTP
// server counting hits: not eligible is never read or written; an entry is served only while the guard
// would still allow its address and size.
import t from 'tap';
import { startTestNats } from '../helpers/nats.ts';
import { cachedFetch, cacheWritesSettled } from '../../actors/converter/cache.ts';
import { OutboundError } from '../../shared/outbound/index.ts';
import { fixtureServer, html } from '../outbound/fixture-server.ts';

t.test('the fetch cache: eligibility, age, and the guard of today', async (t) => {
  const { nc, config } = await startTestNats(t);
  const site = await fixtureServer(t, {
    '/a': html('<p>hello from a</p>'),
    '/gone': (_q, r) => r.writeHead(404).end('no'),
    '/mine': (_q, r) => r.writeHead(200, { 'content-type': 'text/html', 'cache-control': 'private, max-age=60' }).end('<p>yours</p>'),
  });
  const url = site.url('/a');
  const open = { allowCidrs: ['127.0.0.1/32'], maxBytes: 1_000_000 };
  // each call waits for its cache write (written beside the conversion, not before it)
  const fetch = async (o: typeof open, maxAge: number, eligible = true, u = url) => {
    try {
      return await cachedFetch(nc, config, u, o, { maxAge, eligible });
    } finally {
      await cacheWritesSettled();
    }
  };

  const first = await fetch(open, 600, false);
  t.notOk(first.cachedAt);
  t.notOk((await fetch(open, 600)).cachedAt, 'a fetch not eligible was not written');
  t.equal(site.hits.length, 2);
  const hit = await fetch(open, 600);
  t.equal(site.hits.length, 2, 'served from the cache');
  t.ok(hit.cachedAt);
  t.equal(hit.res.url, url);
  t.equal(hit.res.status, 200);
  t.match(String(hit.res.headers['content-type']), /text\/html/);
  t.match(hit.res.body.toString('utf8'), /hello from a/);
  t.notOk((await fetch(open, 600, false)).cachedAt, 'not eligible: not read either');
  t.equal(site.hits.length, 3);
  t.notOk((await fetch(open, 0)).cachedAt, 'maxAge 0 fetches');
  t.equal(site.hits.length, 4);

  await t.rejects(
    fetch({ ...open, maxBytes: 5 }, 600),
    { code: 'too_large' },
    'a body over the size cap of today is fetched (and refused), not served',
  );
  await t.rejects(
    fetch({ allowCidrs: [], maxBytes: 1_000_000 }, 600),
    OutboundError,
    'an address no longer allowed is not served from the cache',
  );

  await fetch(open, 0, true, site.url('/gone'));
  const gone = await fetch(open, 600, true, site.url('/gone'));
  t.notOk(gone.cachedAt, 'a 4xx answer is not kept');
  t.equal(site.hits.filter((h) => h === '/gone').length, 2);

  await fetch(open, 0, true, site.url('/mine'));
  t.notOk((await fetch(open, 600, true, site.url('/mine'))).cachedAt, 'Cache-Control: private is not kept');
  t.equal(site.hits.filter((h) => h === '/mine').length, 2);
});
