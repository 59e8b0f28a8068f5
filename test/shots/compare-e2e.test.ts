// options.compare with the real browser pool: Chromium and Firefox ESR shoot a local page; a page
// styled the same in both engines differs by 0 %, one with a `-moz-` rule (only Gecko applies it)
// differs inside the box that rule paints.
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';

const BOX = { x: 100, y: 80, w: 200, h: 100 };
const page = (mozRule: boolean) => `<!doctype html><html><head><style>
html, body { margin: 0; background: #ffffff; }
#box { position: absolute; left: ${BOX.x}px; top: ${BOX.y}px; width: ${BOX.w}px; height: ${BOX.h}px; background: #ffffff; }
#bar { position: absolute; left: 400px; top: 300px; width: 150px; height: 60px; background: #3366cc; }
${mozRule ? '@supports (-moz-appearance: none) { #box { background: #cc0000; } }' : ''}
</style></head><body><div id="box"></div><div id="bar"></div></body></html>`;

t.test('Chromium vs Firefox: 0 % on the same page, the -moz- box found on the other', async (t) => {
  const site = createServer((req, res) => {
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end(page(req.url === '/moz'));
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => site.close(() => r())));
  const base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'browser-pool'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] }, shots: { browsers: ['chromium', 'firefox'] } },
  });
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 10_000, 'test');
  const run = async (path: string) => {
    const r = await app.request('POST', '/v1/shots/jobs?wait=25', {
      key: k.key,
      body: { url: base + path, browsers: ['chromium', 'firefox'], viewports: ['800x600'], options: { compare: true } },
    });
    t.equal(r.status, 201);
    let job = r.json.job;
    for (let i = 0; i < 10 && (job.status === 'queued' || job.status === 'processing'); i++)
      job = (await app.request('GET', `/v1/jobs/${job.id}?wait=25`, { key: k.key })).json.job;
    t.equal(job.status, 'completed');
    const diff = job.results.find((x: { key: string }) => x.key.startsWith('diff_'));
    t.match(diff, { status: 'done', key: /^diff_chromium-\d+_vs_firefox-\d+_800x600_light\.png$/ });
    return diff.compare;
  };
  const same = await run('/same');
  t.equal(same.perceptualPercent, 0, `the same styling: no perceptual difference (${JSON.stringify(same)})`);
  t.same(same.regions, []);
  const moz = await run('/moz');
  t.ok(moz.perceptualPixels >= BOX.w * BOX.h * 0.9, `the box's pixels differ (${moz.perceptualPixels})`);
  const r = moz.regions[0];
  t.ok(
    r.x <= BOX.x && r.y <= BOX.y && r.x + r.w >= BOX.x + BOX.w && r.y + r.h >= BOX.y + BOX.h,
    `the largest region covers the box: ${JSON.stringify(r)}`,
  );
  t.ok(r.x > BOX.x - 32 && r.y > BOX.y - 32 && r.x + r.w < BOX.x + BOX.w + 32 && r.y + r.h < BOX.y + BOX.h + 32, 'and stays around it');
});
