// The cross-browser diff itself (actors/browser-pool/compare.ts) on images sharp draws: identical →
// 0 %; a changed box → a region around it; different heights → the common height, the rest reported.
import t from 'tap';
import sharp from 'sharp';
import { comparePngs } from '../../actors/browser-pool/compare.ts';

const page = async (w: number, h: number, boxes: { x: number; y: number; w: number; h: number; color: string }[] = []) =>
  sharp({ create: { width: w, height: h, channels: 3, background: '#ffffff' } })
    .composite(
      await Promise.all(
        boxes.map(async (b) => ({
          input: await sharp({ create: { width: b.w, height: b.h, channels: 3, background: b.color } })
            .png()
            .toBuffer(),
          left: b.x,
          top: b.y,
        })),
      ),
    )
    .png()
    .toBuffer();

const labels = { a: 'chromium-156_800x600_light.png', b: 'firefox-153_800x600_light.png' };

t.test('identical shots: 0 % and no regions', async (t) => {
  const a = await page(800, 600, [{ x: 50, y: 60, w: 300, h: 200, color: '#3366cc' }]);
  const { summary, png } = await comparePngs(a, Buffer.from(a), labels);
  t.match(summary, {
    ...labels,
    width: 800,
    height: 600,
    differentPixels: 0,
    differentPercent: 0,
    perceptualPixels: 0,
    perceptualPercent: 0,
    regions: [],
  });
  t.match(await sharp(png).metadata(), { format: 'png', width: 800, height: 600 });
});

t.test('a box of another colour: its pixels counted, one region around it, drawn red over a faded copy', async (t) => {
  const a = await page(800, 600, [{ x: 100, y: 80, w: 200, h: 100, color: '#ffffff' }]);
  const b = await page(800, 600, [{ x: 100, y: 80, w: 200, h: 100, color: '#cc0000' }]);
  const { summary, png } = await comparePngs(a, b, labels);
  t.equal(summary.differentPixels, 200 * 100);
  t.equal(summary.differentPercent, Math.round((10000 * 20000) / 480000) / 100);
  t.equal(summary.perceptualPixels, 200 * 100);
  t.equal(summary.regions.length, 1);
  const r = summary.regions[0]!;
  t.ok(r.x <= 100 && r.y <= 80 && r.x + r.w >= 300 && r.y + r.h >= 180, `covers the box: ${JSON.stringify(r)}`);
  t.ok(r.x > 100 - 16 && r.y > 80 - 16 && r.x + r.w < 300 + 16 && r.y + r.h < 180 + 16, 'and not much more');
  t.equal(r.pixels, 20000);
  const { data } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  const px = (x: number, y: number) => [...data.subarray((y * 800 + x) * 4, (y * 800 + x) * 4 + 3)];
  t.same(px(150, 100), [255, 0, 0], 'a differing pixel is red');
  t.ok(
    px(500, 400).every((c) => c > 200 && c < 256),
    'the rest is the faded first shot',
  );
});

t.test('a one-level colour shift is a difference but not a perceptual one', async (t) => {
  const a = await page(400, 400, [{ x: 0, y: 0, w: 400, h: 200, color: '#808080' }]);
  const b = await page(400, 400, [{ x: 0, y: 0, w: 400, h: 200, color: '#818181' }]);
  const { summary } = await comparePngs(a, b, labels);
  t.equal(summary.differentPixels, 400 * 200);
  t.equal(summary.perceptualPixels, 0);
  t.same(summary.regions, []);
});

t.test('different heights: compared over the common height, the rest reported', async (t) => {
  const a = await page(800, 1500);
  const b = await page(800, 1200, [{ x: 10, y: 1100, w: 50, h: 50, color: '#000000' }]);
  const { summary } = await comparePngs(a, b, labels);
  t.match(summary, {
    width: 800,
    height: 1200,
    sizes: { a: { width: 800, height: 1500 }, b: { width: 800, height: 1200 } },
    uncompared: { rowsA: 300, rowsB: 0, columnsA: 0, columnsB: 0 },
  });
  t.equal(summary.perceptualPixels, 2500);
  t.match(summary.regions[0], { x: 0, y: 1088 });
});

t.test('regions come biggest first, at most five', async (t) => {
  const boxes = [0, 1, 2, 3, 4, 5, 6].map((i) => ({ x: 20 + i * 110, y: 20, w: 20 + i * 10, h: 20, color: '#000000' }));
  const { summary } = await comparePngs(await page(800, 200), await page(800, 200, boxes), labels);
  t.equal(summary.regions.length, 5);
  t.same(
    summary.regions.map((r) => r.pixels),
    [80, 70, 60, 50, 40].map((w) => w * 20),
  );
});
