// Issue 43, shots options at plan time: bad input is a 400 bad_request before any charge (the
// schema's limits and the plan's own checks), prices per option, and what reaches the task.
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { Ajv } from 'ajv';
import { startTestNats } from '../helpers/nats.ts';
import { advertise } from '../../shared/catalogue.ts';
import { BUCKETS } from '../../shared/names.ts';
import { shots, ShotsBody, type ShotsRequest } from '../../shared/services/shots.ts';
import { ApiError } from '../../shared/errors.ts';

const failure = async (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (e instanceof ApiError ? `${e.code}: ${e.message}` : String(e)),
  );

t.test('shots options: bad input refused before any charge, prices, task params', async (t) => {
  const tn = await startTestNats(t);
  const kv = await new Kvm(tn.nc).open(BUCKETS.catalogue);
  const ctx = { config: tn.config, nc: tn.nc, walletId: 'w', catalogueKv: kv, datasetsKv: kv };
  const cat = await advertise(tn.nc, 'shots', 'a', () => ({
    browsers: [
      { id: 'chromium', name: 'Chromium', engine: 'chromium', versions: ['156'], lacks: [] },
      { id: 'firefox', name: 'Firefox', engine: 'gecko', versions: ['153'], lacks: ['locale'] },
    ],
  }));
  t.teardown(() => cat.stop());
  const plan = (options: Record<string, unknown>, browsers: string[] = ['chromium']) =>
    shots.plan({ url: 'https://example.com/x', browsers, options } as ShotsRequest, ctx);
  const ajv = new Ajv({ strict: false });
  const valid = ajv.compile(ShotsBody);
  const schemaOk = (options: Record<string, unknown>) => valid({ url: 'https://example.com/', browsers: ['chromium'], options });

  // refused by the schema (the gateway's validate step answers 400 bad_request)
  t.notOk(schemaOk({ actions: Array.from({ length: 21 }, () => ({ type: 'press', key: 'Tab' })) }), 'more than 20 actions');
  t.notOk(schemaOk({ js: 'x'.repeat(16 * 1024 + 1) }), 'a script over 16 KB');
  t.notOk(schemaOk({ css: 'x'.repeat(16 * 1024 + 1) }), 'a style sheet over 16 KB');
  t.notOk(schemaOk({ format: 'gif' }), 'an unknown format');
  t.notOk(schemaOk({ quality: 0 }), 'quality below 1');
  t.notOk(schemaOk({ thumbWidth: 99 }), 'a thumbnail below 100 px');
  t.notOk(schemaOk({ actions: [{ type: 'hover', selector: 'a' }] }), 'an unknown action');
  t.ok(schemaOk({ selector: '#x', format: 'jpeg', quality: 50, actions: [{ type: 'wait', ms: 100 }] }), 'a good body passes');

  // refused by the plan, each a 400 bad_request naming what is wrong
  t.match(await failure(plan({ selector: '#x', fullPage: true })), /^bad_request: options.selector .*options.fullPage/);
  t.match(await failure(plan({ js: 'é'.repeat(9000) })), /^bad_request: options.js is 18000 bytes/, 'bytes, not characters');
  t.match(await failure(plan({ js: 'this is not javascript(' })), /^bad_request: options.js does not compile/);
  t.match(await failure(plan({ headers: { Host: 'evil' } })), /^bad_request: options.headers: Host/);
  t.match(await failure(plan({ headers: { Connection: 'close' } })), /^bad_request: options.headers: Connection/);
  t.match(await failure(plan({ headers: { 'Proxy-Authorization': 'x' } })), /^bad_request: options.headers: Proxy-Authorization/);
  t.match(await failure(plan({ headers: { Cookie: 'a=b' } })), /^bad_request: options.headers: Cookie .*options.cookies/);
  t.match(await failure(plan({ selector: 'div >> p' })), /^bad_request: options.selector: "div >> p" is not a valid CSS selector/);
  t.match(await failure(plan({ actions: [{ type: 'click', selector: 'a[' }] })), /^bad_request: options.actions\[0\].selector/);
  t.match(await failure(plan({ hideSelectors: ['ok', '##'] })), /^bad_request: options.hideSelectors\[1\]/);
  t.match(await failure(plan({ timezone: 'Mars/Olympus' })), /^bad_request: options.timezone/);
  t.match(await failure(plan({ quality: 50 })), /^bad_request: options.quality applies to jpeg and webp/);
  t.match(
    await failure(
      plan({
        actions: [
          { type: 'wait', ms: 20000 },
          { type: 'wait', ms: 20000 },
        ],
      }),
    ),
    /^bad_request: options.actions wait 40000 ms/,
  );
  t.match(await failure(plan({ locale: 'de-DE' }, ['chromium', 'firefox'])), /^bad_request: browser firefox cannot honour options.locale/);
  t.equal(await failure(plan({ locale: 'de-DE' }, ['chromium'])), 'ok', 'chromium honours locale');

  // prices: page work and ad blocking cost extra per shot, the rest is free
  const p = tn.config.pricing.shots;
  const price = async (o: Record<string, unknown>) => (await plan(o)).items[0]!.price;
  t.equal(
    await price({ selector: '#a', format: 'webp', quality: 60, thumbWidth: 200, headers: { 'X-A': '1' }, userAgent: 'x' }),
    p.screenshot,
  );
  t.equal(await price({ js: 'document.body.remove()' }), p.screenshot + p.scripted);
  t.equal(await price({ css: 'a{}', click: 'a', blockAds: true }), p.screenshot + p.scripted + p.blockAds);

  // the key says the format; the task carries the controls, the cookie's value only in its secret
  const jp = await plan({ format: 'jpeg', selector: '#a', cookies: [{ name: 's', value: 'v' }] });
  t.equal(jp.items[0]!.key, 'chromium-156_1920x1080_light.jpg');
  t.match(jp.items[0]!.task!.params, { options: { format: 'jpeg', quality: 80, thumbWidth: 400, selector: '#a', cookieNames: ['s'] } });
  t.notOk(JSON.stringify(jp.items[0]!.task!.params).includes('"v"'), 'the value is not in the params the job keeps');
  t.same(jp.items[0]!.task!.secret, { cookies: [{ name: 's', value: 'v' }] });
  t.equal((await plan({ format: 'webp' })).items[0]!.key, 'chromium-156_1920x1080_light.webp');
});
