import t from 'tap';
import sharp from 'sharp';
import { Kvm } from '@nats-io/kv';
import { Objm } from '@nats-io/obj';
import { startTestNats } from '../helpers/nats.ts';
import { failingTargets, EXPECTED } from '../helpers/failing-targets.ts';
import { startPool, shotTask, publishTask, watchOutcomes, newJobId } from './pool.ts';
import { readCatalogue } from '../../shared/catalogue.ts';
import { BUCKETS, OBJECT_STORES, subjects } from '../../shared/names.ts';
import { shots, mergeOffers } from '../../shared/services/shots.ts';
import { call } from '../../shared/micro.ts';
import { ApiError } from '../../shared/errors.ts';

t.test(
  'browser-pool: advertises what it launched, takes shots from its consumers, stores PNG + WebP thumbnail, disappears on stop',
  async (t) => {
    const tn = await startTestNats(t);
    const on = await failingTargets(t);
    const { fx } = on;
    const pool = await startPool(t, tn, ['chromium', 'mobile'], 'pool-a');
    const kv = await new Kvm(tn.nc).open(BUCKETS.catalogue);

    const offers = mergeOffers(await readCatalogue(kv, 'shots'));
    const chromium = offers.find((o) => o.id === 'chromium');
    const mobile = offers.find((o) => o.id === 'mobile');
    t.ok(chromium && /^\d{3}$/.test(chromium.versions[0]!), `chromium version ${chromium?.versions}`);
    t.same(mobile?.mobile, { w: 412, h: 915, deviceScaleFactor: 2.625 });
    const version = chromium!.versions[0]!;

    // the service module plans against this live catalogue
    const plan = await shots.plan(
      { url: fx.url('/plain'), browsers: ['chromium', 'mobile'], viewports: ['hd'], schemes: ['light', 'dark'] },
      { config: tn.config, nc: tn.nc, walletId: 'w', catalogueKv: kv, datasetsKv: kv },
    );
    t.same(plan.items.map((i) => i.key).sort(), [
      `chromium-${version}_1280x720_dark.png`,
      `chromium-${version}_1280x720_light.png`,
      `mobile-${version}_412x915_dark.png`,
      `mobile-${version}_412x915_light.png`,
    ]);
    t.equal(plan.items[0]!.task!.subject, subjects.taskShots('chromium', version));

    const jobId = newJobId();
    const outcomes = watchOutcomes(tn.nc, jobId);
    const tasks = [
      shotTask(jobId, { url: fx.url('/plain'), browser: 'chromium', version, viewport: { w: 1280, h: 720 }, scheme: 'light' }),
      shotTask(jobId, { url: fx.url('/plain'), browser: 'mobile', version, viewport: { w: 412, h: 915 }, scheme: 'dark' }),
      shotTask(jobId, { url: `${on.dead}nothing-listens`, browser: 'chromium', version, viewport: { w: 1280, h: 720 }, scheme: 'dark' }),
    ];
    for (const task of tasks) await publishTask(tn.nc, task);
    const got = await outcomes.waitFor(3);
    const os = await new Objm(tn.nc).open(OBJECT_STORES.results);

    const desktop = got.get(tasks[0]!.resultKey)!;
    t.equal(desktop.kind, 'done');
    if (desktop.kind === 'done') {
      t.match(desktop.file, {
        store: OBJECT_STORES.results,
        name: tasks[0]!.objectName,
        contentType: 'image/png',
        filename: tasks[0]!.resultKey,
        thumb: { contentType: 'image/webp' },
      });
      const png = Buffer.from((await os.getBlob(desktop.file!.name))!);
      t.equal(png.length, desktop.file!.bytes);
      t.match(await sharp(png).metadata(), { format: 'png', width: 1280, height: 720 });
      const thumb = Buffer.from((await os.getBlob(desktop.file!.thumb!.name))!);
      t.equal(thumb.length, desktop.file!.thumb!.bytes);
      t.match(await sharp(thumb).metadata(), { format: 'webp', width: 400, height: 225 });
      t.match(desktop.extra, { status: 200, width: 1280, height: 720 });
    }
    const phone = got.get(tasks[1]!.resultKey)!;
    t.equal(phone.kind, 'done');
    if (phone.kind === 'done') t.match(phone.extra, { width: 1082, height: 2402 });
    const dead = got.get(tasks[2]!.resultKey)!;
    t.match(dead, { kind: 'failed', error: EXPECTED.dead }, JSON.stringify(dead));
    t.same(pool.stats().shots, 2);

    // websitepro's endpoints
    const html = await call<{ html: string; finalUrl: string; status: number }>(
      tn.nc,
      subjects.browser.renderHtml,
      { url: fx.url('/js') },
      30000,
    );
    t.match(html.html, 'rendered by script');
    t.equal(html.status, 200);
    const pdf = await call<{ bytes: number; contentType: string }>(
      tn.nc,
      subjects.browser.renderPdf,
      { url: fx.url('/plain'), store: OBJECT_STORES.results, objectName: `${jobId}/pdf` },
      30000,
    );
    t.equal(pdf.contentType, 'application/pdf');
    const pdfBytes = Buffer.from((await os.getBlob(`${jobId}/pdf`))!);
    t.equal(pdfBytes.length, pdf.bytes);
    t.equal(pdfBytes.subarray(0, 5).toString(), '%PDF-');
    const refused = await call(tn.nc, subjects.browser.renderHtml, { url: on.dead }, 30000).catch((e: unknown) => e);
    t.ok(refused instanceof ApiError && refused.code === EXPECTED.dead, `a dead target answers unreachable: ${String(refused)}`);

    outcomes.stop();
    await pool.stop();
    t.same(await readCatalogue(kv, 'shots'), [], 'catalogue entry removed on stop');
  },
);
