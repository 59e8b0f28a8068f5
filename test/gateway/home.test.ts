// The front door: `/` answers a browser with a page (what is sold, prices from the price list,
// links to the account page, the reference and the errors page) and an API client with the /v1
// index as JSON. The release (package.json's version) is in /v1 and in /metrics.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { startTestApp } from '../helpers/app.ts';

const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';
const VERSION = JSON.parse(readFileSync('package.json', 'utf8')).version;

t.test('/ is a page to a browser and the /v1 index to an API client', async (t) => {
  const app = await startTestApp(t);
  const page = await app.request('GET', '/', { headers: { accept: BROWSER } });
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /^text\/html/);
  t.match(page.headers.get('vary'), /accept/i);
  t.match(page.headers.get('content-security-policy'), /default-src 'none'/);
  for (const href of ['/account', '/docs', '/docs/errors', '/openapi.json']) t.match(page.text, `href="${href}"`, `links ${href}`);
  for (const s of ['websitepro', 'shots', 'labs']) t.match(page.text, `id="${s}"`, `sells ${s}`);
  const p = app.config.pricing;
  t.match(page.text, `<td><code>markdown</code></td><td>${p.websitepro.markdown}</td>`, 'websitepro prices from the price list');
  t.match(page.text, `<td><code>screenshot</code></td><td>${p.shots.screenshot}</td>`, 'shots prices');
  t.match(page.text, `<td><code>quick</code></td><td>${p.labs.quick}</td>`, 'labs prices');
  t.match(page.text, `Payloads ${VERSION}`, 'the release');

  const index = (await app.request('GET', '/v1')).json;
  for (const accept of [undefined, '*/*', 'application/json', 'application/json, text/html']) {
    const r = await app.request('GET', '/', accept ? { headers: { accept } } : {});
    t.equal(r.status, 200, `Accept ${accept}: 200, not a 404`);
    t.match(r.headers.get('content-type'), /^application\/json/, `Accept ${accept}: JSON`);
    t.same(r.json, index, `Accept ${accept}: the /v1 index`);
  }
  t.equal(index.version, VERSION, '/v1 names the release');
  t.equal(index.apiVersion, '1');
  t.equal(index.links.reference, `${app.gateway.url}/docs`, '/v1 links the reference');

  const metrics = await app.request('GET', '/metrics');
  t.match(metrics.text, `payloads_build_info{version="${VERSION}"} 1`, 'the release as a metric');
});
