import t from 'tap';
import sharp from 'sharp';
import { startFixtures, pixel } from './fixtures.ts';
import type { Browser } from 'puppeteer-core';
import { testBrowser } from './browsers.ts';
import { sparticuzFlags } from '../../actors/browser-pool/launchers/sparticuz-chromium.ts';
import { chromiumHeapFlag } from '../../actors/browser-pool/launchers/types.ts';
import { firefoxPrefs } from '../../actors/browser-pool/launchers/firefox.ts';
import { loadConfig } from '../../shared/config/index.ts';

// the older majors ship as brotli-packed headless-shell binaries in npm packages
for (const [id, major] of [
  ['chromium-143', '143'],
  ['chromium-131', '131'],
] as const) {
  t.test(`${id}: unpacks, launches headless and reports its real version`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    t.equal(b.version, major);
    const shot = await b.shoot(fx.url('/scheme'), { viewport: { w: 640, h: 480 }, scheme: 'dark' });
    t.match(await sharp(shot.png).metadata(), { width: 640, height: 480 });
    t.same(await pixel(shot.png, 10, 10), [0, 0, 0], 'dark scheme in an old Chromium too');
    t.ok(fx.agents.get('/scheme')?.includes(`Chrome/${major}.`), 'the page saw that version');
  });
}

t.test('sparticuz flags: the unsafe and crashing ones are dropped', async (t) => {
  const flags = sparticuzFlags([
    '--single-process',
    '--disable-web-security',
    '--no-zygote',
    "--headless='shell'",
    '--use-gl=angle',
    '--no-pings',
  ]);
  t.same(flags, ['--no-zygote', '--no-pings']);
});

t.test("the page heap: config.shots.pageHeapMb (1024 by default) is every launch's script heap limit", async (t) => {
  const cfg = loadConfig({ env: {}, noDefaultFile: true });
  t.equal(cfg.shots.pageHeapMb, 1024, 'the default');
  t.equal(loadConfig({ env: {}, noDefaultFile: true, overrides: { shots: { pageHeapMb: 300 } } }).shots.pageHeapMb, 300);
  t.throws(
    () => loadConfig({ env: {}, noDefaultFile: true, overrides: { shots: { pageHeapMb: 10 } } }),
    /pageHeapMb/,
    'below 64 MB refused',
  );
  t.equal(chromiumHeapFlag({}), '--js-flags=--max-old-space-size=1024', 'Chromium, not given');
  t.equal(chromiumHeapFlag({ pageHeapMb: 300 }), '--js-flags=--max-old-space-size=300', 'Chromium');
  t.equal(firefoxPrefs({ pageHeapMb: 300 })['javascript.options.mem.max'], 300, 'Firefox');
  t.equal(firefoxPrefs({})['javascript.options.mem.max'], 1024, 'Firefox, not given');
});

t.test('chromium: restarted after restartAfter pages, and after a crash', async (t) => {
  const fx = await startFixtures(t);
  const b = await testBrowser(t, 'chromium', { restartAfter: 2 });
  const mb = b.managed();
  t.equal(mb.launches, 1);
  await b.shoot(fx.url('/plain'), { viewport: { w: 320, h: 320 } });
  await b.shoot(fx.url('/plain'), { viewport: { w: 320, h: 320 } });
  await b.shoot(fx.url('/plain'), { viewport: { w: 320, h: 320 } });
  t.equal(mb.launches, 2, 'a new browser after 2 pages');
  // kill the running browser behind the pool's back
  await mb.withContext(5000, async (_ctx, browser) => {
    browser.process()?.kill('SIGKILL');
  });
  await new Promise((r) => setTimeout(r, 300));
  const shot = await b.shoot(fx.url('/plain'), { viewport: { w: 320, h: 320 } });
  t.equal(shot.width, 320);
  t.equal(mb.launches, 3, 'relaunched after the crash');
});

t.test('chromium: an error on the DevTools pipe after puppeteer let go of it does not end the process', async (t) => {
  const b = await testBrowser(t, 'chromium');
  let browser: Browser | undefined;
  await b.managed().withContext(30000, async (_ctx, br) => {
    browser = br;
  });
  const child = browser!.process()!;
  const pipes = [child.stdio[3], child.stdio[4]].filter((s) => s !== null && s !== undefined);
  t.equal(pipes.length, 2, 'launched over a pipe (stdio 3 and 4)');
  // what close() does before a browser slow to close is killed: puppeteer's listeners come off the pipe
  await browser!.disconnect();
  // the kill then resets the pipe (a whole-suite run: an uncaught `read ECONNRESET` on a Pipe)
  const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', errno: -104, syscall: 'read' });
  for (const p of pipes) t.doesNotThrow(() => p.emit('error', reset), 'the error is not thrown at the process');
  child.kill('SIGKILL');
});
