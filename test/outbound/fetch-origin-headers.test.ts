// guardedFetch's originHeaders (issue 43): sent on every hop to the target's origin (a redirect back
// to it included), never on a hop to another origin; they replace a default of the same name.
import t from 'tap';
import type { IncomingHttpHeaders } from 'node:http';
import { guardedFetch } from '../../shared/outbound/index.ts';
import { fixtureServer } from './fixture-server.ts';

t.test('credentials reach the target origin only', async (t) => {
  const seen: [string, IncomingHttpHeaders][] = [];
  let back = '';
  const other = await fixtureServer(t, {
    '/b': (req, res) => {
      seen.push(['other', req.headers]);
      res.writeHead(307, { location: back }).end();
    },
  });
  const target = await fixtureServer(t, {
    '/a': (req, res) => {
      seen.push(['target', req.headers]);
      res.writeHead(302, { location: other.url('/b') }).end();
    },
    '/c': (req, res) => {
      seen.push(['target', req.headers]);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    },
  });
  back = target.url('/c');
  const res = await guardedFetch(target.url('/a'), {
    allowCidrs: ['127.0.0.1/32'],
    headers: { accept: 'text/plain' },
    originHeaders: { origin: new URL(target.base).origin, headers: { 'X-Token': 'v1', Accept: 'text/html', cookie: 'a=b' } },
  });
  t.equal(res.body.toString(), 'ok');
  t.same(
    seen.map(([who, h]) => [who, h['x-token'] ?? null, h.cookie ?? null, h.accept]),
    [
      ['target', 'v1', 'a=b', 'text/html'],
      ['other', null, null, 'text/plain'],
      ['target', 'v1', 'a=b', 'text/html'],
    ],
  );
});
