import t from 'tap';
import sharp from 'sharp';
import { decode, isBlankRaw } from '../../actors/browser-pool/capture.ts';
import { makeThumb } from '../../actors/browser-pool/store.ts';

const solid = (w: number, h: number) =>
  sharp({ create: { width: w, height: h, channels: 4, background: { r: 10, g: 20, b: 30, alpha: 1 } } })
    .png()
    .toBuffer();

t.test('blank detection: one colour is blank, a single different pixel is not', async (t) => {
  t.equal(isBlankRaw(await decode(await solid(300, 200))), true);
  const dot = await sharp(await solid(300, 200))
    .composite([{ input: Buffer.from([255, 255, 255, 255]), raw: { width: 1, height: 1, channels: 4 }, left: 299, top: 199 }])
    .png()
    .toBuffer();
  t.equal(isBlankRaw(await decode(dot)), false, 'last pixel differs');
});

t.test('thumbnails: WebP, 400 px wide, tall shots keep their top', async (t) => {
  const wide = await solid(1920, 1080);
  const th = await sharp(await makeThumb(wide, await decode(wide))).metadata();
  t.match(th, { format: 'webp', width: 400, height: 225 });
  const tall = await solid(1000, 9000);
  t.match(await sharp(await makeThumb(tall)).metadata(), { format: 'webp', width: 400, height: 1000 });
  const small = await solid(320, 320);
  t.match(await sharp(await makeThumb(small)).metadata(), { width: 320, height: 320 }, 'never enlarged');
});

t.test('malformed task params are refused as a failure, not retried', async (t) => {
  const { checkShotParams } = await import('../../actors/browser-pool/capture.ts');
  const failure = (p: unknown) => {
    try {
      checkShotParams(p);
      return 'accepted';
    } catch (e) {
      return (e as { error?: string }).error;
    }
  };
  t.equal(failure({ url: 'file:///etc/passwd', viewport: { w: 1, h: 1 }, scheme: 'light', options: {} }), 'render_failed', 'file: URL');
  t.equal(failure(undefined), 'render_failed', 'no params');
  t.match(checkShotParams({ url: 'https://e.com/', viewport: { w: 800, h: 600 }, scheme: 'dark', options: { delay: 7, retina: 1 } }), {
    options: { delay: 0, retina: true, fullPage: false },
  });
});

t.test('page slots: a limit, FIFO wake-ups, and a waiter that gives up leaves no hole', async (t) => {
  const { Slots } = await import('../../actors/browser-pool/pool.ts');
  const s = new Slots(1);
  const r1 = await s.acquire();
  const keepAlive = setTimeout(() => {}, 5000); // AbortSignal.timeout's timer does not hold the loop
  t.teardown(() => clearTimeout(keepAlive));
  const gaveUp = s.acquire(AbortSignal.timeout(50)).then(
    () => 'got',
    () => 'gave up',
  );
  const order: string[] = [];
  const w2 = s.acquire().then((r) => {
    order.push('w2');
    return r;
  });
  t.equal(await gaveUp, 'gave up');
  t.equal(s.busy, 1);
  r1();
  const r2 = await w2;
  t.same(order, ['w2'], 'the remaining waiter got the page released after the other gave up');
  r2();
  r2(); // twice is harmless
  t.equal(s.busy, 0);
});
