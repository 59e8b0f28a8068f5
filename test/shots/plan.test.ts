import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { Ajv } from 'ajv';
import { createServer } from 'node:net';
import { startTestNats, testConfig } from '../helpers/nats.ts';
import { advertise } from '../../shared/catalogue.ts';
import { BUCKETS, subjects } from '../../shared/names.ts';
import { shots, parseViewport, ShotsBody, type ShotsRequest } from '../../shared/services/shots.ts';
import { ApiError } from '../../shared/errors.ts';

const code = async (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (e instanceof ApiError ? e.code : String(e)),
  );

t.test('plan: browsers and versions from the live catalogue, viewports, schemes, prices', async (t) => {
  const tn = await startTestNats(t);
  const kv = await new Kvm(tn.nc).open(BUCKETS.catalogue);
  const ctx = { config: tn.config, nc: tn.nc, walletId: 'w', catalogueKv: kv, datasetsKv: kv };
  const plan = (b: Partial<ShotsRequest>) =>
    shots.plan({ url: 'https://example.com/x', browsers: ['chromium'], ...b } as ShotsRequest, ctx);

  t.equal(await code(plan({})), 'service_unavailable', 'no instance running: 503');

  // two instances with different version sets: the catalogue is their union
  const a = await advertise(tn.nc, 'shots', 'a', () => ({
    browsers: [{ id: 'chromium', name: 'Chromium', engine: 'chromium', versions: ['156', '131'] }],
  }));
  const b = await advertise(tn.nc, 'shots', 'b', () => ({
    browsers: [
      { id: 'chromium', name: 'Chromium', engine: 'chromium', versions: ['143'] },
      { id: 'mobile', name: 'Phone', engine: 'chromium', versions: ['156'], mobile: { w: 412, h: 915, deviceScaleFactor: 2.625 } },
    ],
  }));
  t.teardown(async () => {
    await a.stop();
    await b.stop();
  });

  const p1 = await plan({});
  t.same(
    p1.items.map((i) => i.key),
    ['chromium-156_1920x1080_light.png'],
    'string id: newest version, default viewport and scheme',
  );
  t.equal(p1.target, 'example.com');
  t.equal(p1.items[0]!.price, tn.config.pricing.shots.screenshot);
  t.equal(p1.items[0]!.task!.subject, subjects.taskShots('chromium', '156'));

  const p2 = await plan({
    browsers: [{ id: 'chromium', versions: ['143', '131'] }],
    viewports: ['hd', '800x600', { w: 320, h: 2400 }],
    schemes: ['light', 'dark'],
  });
  t.equal(p2.items.length, 2 * 3 * 2, 'versions x viewports x schemes');
  t.ok(p2.items.some((i) => i.key === 'chromium-131_320x2400_dark.png'));
  t.ok(p2.items.some((i) => i.key === 'chromium-143_1280x720_light.png'));

  const p3 = await plan({ browsers: ['mobile'], viewports: ['fhd', 'qhd'], options: { retina: true, fullPage: true } });
  t.same(
    p3.items.map((i) => i.key),
    ['mobile-156_412x915_light.png'],
    'a phone ignores request viewports',
  );
  t.equal(p3.items[0]!.price, tn.config.pricing.shots.screenshot + tn.config.pricing.shots.fullPage, 'no retina charge on a phone');
  t.match(p3.items[0]!.task!.params, { options: { retina: false, fullPage: true } });

  t.equal(await code(plan({ browsers: ['safari'] })), 'unknown_browser');
  t.equal(await code(plan({ browsers: [{ id: 'chromium', versions: ['99'] }] })), 'unknown_browser');
  t.equal(await code(plan({ viewports: ['1x1'] })), 'bad_viewport');
  t.equal(await code(plan({ viewports: ['hd', 'fhd', 'qhd', 'laptop'] })), 'bad_viewport');
  t.equal(await code(plan({ url: 'ftp://example.com/' })), 'bad_url');
});

t.test('viewport forms and limits', async (t) => {
  t.same(parseViewport('fhd'), { w: 1920, h: 1080 });
  t.same(parseViewport('phone'), { w: 390, h: 844 });
  t.same(parseViewport('3840x2400'), { w: 3840, h: 2400 });
  t.same(parseViewport({ w: 320, h: 320 }), { w: 320, h: 320 });
  for (const bad of ['3841x1000', '1000x2401', '319x500', 'wide', '100x', { w: 1.5, h: 400 }, { w: 400 }, 42]) {
    t.throws(() => parseViewport(bad), { code: 'bad_viewport' }, JSON.stringify(bad));
  }
});

t.test('schema violations map to the spec codes', async (t) => {
  const ajv = new Ajv({ allErrors: false, strict: false });
  const validate = ajv.compile(ShotsBody);
  const first = (body: unknown) => (validate(body) ? 'ok' : shots.errorCode(validate.errors![0]!));
  t.equal(first({ url: 'https://e.com', browsers: ['chromium'] }), 'ok');
  t.equal(first({ url: 'https://e.com', browsers: [] }), 'bad_request');
  t.equal(first({ url: 'https://e.com', browsers: ['chromium'], viewports: ['a', 'b', 'c', 'd'] }), 'bad_viewport');
  t.equal(first({ url: 'https://e.com', browsers: ['chromium'], viewports: [{ w: 100, h: 400 }] }), 'bad_viewport');
  t.equal(first({ url: 'https://e.com', browsers: ['chromium'], options: { delay: 3 } }), 'bad_request');
  t.equal(first({ url: 5, browsers: ['chromium'] }), 'bad_url');
});

t.test('precheck: private targets and dead ports are refused before any charge', async (t) => {
  const strict = testConfig({ outbound: { allowCidrs: [] } });
  const body = (url: string) => ({ url, browsers: ['chromium'] }) as ShotsRequest;
  const ctx = { config: strict } as never;
  t.equal(await code(shots.precheck!(body('http://127.0.0.1:8080/'), { target: '', items: [] }, ctx)), 'blocked_address');
  t.equal(await code(shots.precheck!(body('http://[::ffff:10.0.0.1]/'), { target: '', items: [] }, ctx)), 'blocked_address');
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  const open = testConfig();
  t.equal(await code(shots.precheck!(body(`http://127.0.0.1:${port}/`), { target: '', items: [] }, { config: open } as never)), 'ok');
  await new Promise((r) => s.close(r));
  t.equal(
    await code(shots.precheck!(body(`http://127.0.0.1:${port}/`), { target: '', items: [] }, { config: open } as never)),
    'unreachable',
  );
});
