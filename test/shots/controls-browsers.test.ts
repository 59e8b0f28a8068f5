// Issue 43, every browser we offer: the element capture, the target-origin header, userAgent,
// timezone and locale (where the browser has it: not Firefox, whose catalogue says so) and the
// JPEG, in Chromium's older majors, the phone and Firefox. (controls.test.ts covers every option in
// Chromium and Firefox.)
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sharedBrowsers } from './browsers.ts';
import { launcherFor } from '../../actors/browser-pool/launchers/registry.ts';
import { ENGINE_LACKS } from '../../shared/services/shots-options.ts';

t.jobs = 3;
const shared = sharedBrowsers(t);
const seen: { path: string; secret?: string; ua?: string; lang?: string }[] = [];
const server = createServer((req, res) => {
  seen.push({
    path: req.url ?? '/',
    secret: req.headers['x-secret'] as string,
    ua: req.headers['user-agent'],
    lang: req.headers['accept-language'],
  });
  if (req.url?.startsWith('/report')) return void res.end('ok');
  res
    .writeHead(200, { 'content-type': 'text/html' })
    .end(
      '<!doctype html><html><body style="margin:0"><div id="box" style="margin:20px 0 0 17px;width:111px;height:55px;background:rgb(0,120,0)"></div></body></html>',
    );
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
t.teardown(() => server.close());
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

for (const id of ['chromium-143', 'chromium-131', 'mobile', 'firefox']) {
  t.test(`${id}: selector, header, userAgent, timezone, locale, jpeg`, async (t) => {
    const b = await shared(id);
    const tag = `${id}-${Date.now()}`;
    const locale = id === 'firefox' ? undefined : 'de-DE';
    t.equal(
      ENGINE_LACKS[id === 'firefox' ? 'gecko' : 'chromium'].includes('locale'),
      id === 'firefox',
      'the catalogue says which lacks locale',
    );
    const shot = await b.shoot(`${base}/page?${tag}`, {
      viewport: { w: 640, h: 480 },
      options: {
        selector: '#box',
        format: 'jpeg',
        quality: 90,
        headers: { 'X-Secret': 's' },
        userAgent: `ProbeUA/${tag}`,
        timezone: 'Asia/Tokyo',
        ...(locale ? { locale } : {}),
        js: `await fetch('/report?' + encodeURIComponent([Intl.DateTimeFormat().resolvedOptions().timeZone, navigator.language, navigator.userAgent].join('|')))`,
      } as never,
    });
    // the phone's device pixels: the CSS size times its pixel ratio
    const dpr = launcherFor(id).mobile?.deviceScaleFactor ?? 1;
    t.same([shot.width, shot.height], [Math.round(111 * dpr), Math.round(55 * dpr)], `the element's size (x${dpr})`);
    t.same([...shot.file.subarray(0, 2)], [0xff, 0xd8]);
    const page = seen.find((s) => s.path === `/page?${tag}`);
    t.equal(page?.secret, 's', 'the header reached the target');
    t.equal(page?.ua, `ProbeUA/${tag}`, 'the User-Agent sent');
    if (locale) t.match(page?.lang, /^de-DE/, 'Accept-Language');
    const report = seen.find((s) => s.path.startsWith('/report') && s.ua === `ProbeUA/${tag}`);
    t.ok(report, 'the script reported');
    const [tz, lang, ua] = decodeURIComponent(report!.path.slice('/report?'.length)).split('|');
    t.equal(tz, 'Asia/Tokyo');
    t.equal(ua, `ProbeUA/${tag}`);
    if (locale) t.equal(lang, 'de-DE');
  });
}
