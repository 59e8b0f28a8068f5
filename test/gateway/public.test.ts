import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { advertise } from '../../shared/catalogue.ts';

t.test('public endpoints', async (t) => {
  const app = await startTestApp(t);

  t.test('GET /v1 lists services and links', async (t) => {
    const r = await app.request('GET', '/v1');
    t.equal(r.status, 200);
    t.same(
      r.json.services.map((s: any) => s.name),
      ['websitepro', 'shots', 'labs'],
    );
    t.match(r.json.links, {
      pricing: `${app.gateway.url}/v1/pricing`,
      openapi: `${app.gateway.url}/openapi.json`,
      account: `${app.gateway.url}/account`,
      errors: `${app.gateway.url}/docs/errors`,
    });
    t.ok(r.headers.get('x-request-id'), 'request id header');
  });

  t.test('GET /v1/pricing shows every price in Payloads and EUR from config', async (t) => {
    const r = await app.request('GET', '/v1/pricing');
    t.equal(r.status, 200);
    t.equal(r.json.payloadsPerEur, 10000);
    const md = r.json.services.websitepro.items.find((i: any) => i.key === 'markdown');
    t.same(md, {
      key: 'markdown',
      payloads: app.config.pricing.websitepro.markdown,
      eur: app.config.pricing.websitepro.markdown / 10000,
      per: 'output',
    });
    t.equal(r.json.services.labs.items.find((i: any) => i.key === 'dataset').payloads, app.config.pricing.labs.dataset);
    t.same(r.json.topups.bonus, app.config.wallet.bonus);
  });

  t.test('GET /v1/services reflects live instances', async (t) => {
    // the answer is precomputed and rebuilt when the catalogue watch delivers a change: a change
    // shows within moments, not necessarily on the very next request
    const availability = async () => {
      const r = await app.request('GET', '/v1/services');
      t.equal(r.status, 200);
      return JSON.stringify(r.json.services.map((s: any) => [s.name, s.available, s.instances]));
    };
    const eventually = async (want: unknown, what: string) => {
      let got = await availability();
      for (let i = 0; i < 100 && got !== JSON.stringify(want); i++) {
        await new Promise((r) => setTimeout(r, 50));
        got = await availability();
      }
      t.equal(got, JSON.stringify(want), what);
    };
    await eventually(
      [
        ['websitepro', false, 0],
        ['shots', false, 0],
        ['labs', false, 0],
      ],
      'nothing runs',
    );
    const ad = await advertise(app.nc, 'websitepro', 'inst-1', () => ({ outputs: ['metadata', 'markdown'] }));
    await eventually(
      [
        ['websitepro', true, 1],
        ['shots', false, 0],
        ['labs', false, 0],
      ],
      'shown once the instance advertised (fails if never reflected)',
    );
    await ad.stop();
    await eventually(
      [
        ['websitepro', false, 0],
        ['shots', false, 0],
        ['labs', false, 0],
      ],
      'gone once the instance stops',
    );
  });

  t.test('GET /v1/services reads nothing from NATS per request', async (t) => {
    const ad = await advertise(app.nc, 'labs', 'inst-2', () => ({}));
    t.teardown(() => ad.stop());
    for (let i = 0; i < 100 && !(await app.request('GET', '/v1/services')).json.services[2].available; i++)
      await new Promise((r) => setTimeout(r, 50));
    // reading the catalogue per request costs a stream-info request (the mirror's sync) or a listing
    let apiCalls = 0;
    const spy = app.nc.subscribe('$JS.API.>', {
      callback: (_e, m) => {
        if (m.subject.includes('KV_catalogue')) apiCalls++;
      },
    });
    await app.nc.flush();
    for (let i = 0; i < 30; i++) t.equal((await app.request('GET', '/v1/services')).status, 200);
    await app.nc.flush();
    spy.unsubscribe();
    t.equal(apiCalls, 0, 'no catalogue read per GET (fails when each GET syncs the catalogue)');
  });

  t.test('GET /v1/services/{service}: catalogue, 404 unknown_service, 503 service_unavailable', async (t) => {
    let r = await app.request('GET', '/v1/services/nope');
    t.equal(r.status, 404);
    t.equal(r.json.error.code, 'unknown_service');
    t.match(r.json.error.docs, /\/docs\/errors#unknown_service$/);
    r = await app.request('GET', '/v1/services/shots');
    t.equal(r.status, 503);
    t.equal(r.json.error.code, 'service_unavailable');
    const a = await advertise(app.nc, 'shots', 'pool-a', () => ({
      browsers: [{ id: 'chromium', name: 'Chromium', engine: 'chromium', versions: ['156'] }],
    }));
    const b = await advertise(app.nc, 'shots', 'pool-b', () => ({
      browsers: [
        { id: 'chromium', name: 'Chromium', engine: 'chromium', versions: ['143'] },
        { id: 'firefox', name: 'Firefox', engine: 'gecko', versions: ['153'] },
      ],
    }));
    r = await app.request('GET', '/v1/services/shots');
    t.equal(r.status, 200);
    t.same(
      r.json.browsers.map((x: any) => [x.id, x.versions]),
      [
        ['chromium', ['156', '143']],
        ['firefox', ['153']],
      ],
      'versions merged newest first',
    );
    t.equal(r.json.instances.length, 2);
    await a.stop();
    await b.stop();
  });
});

t.test('a running converter advertises websitepro outputs in its live catalogue', async (t) => {
  const app = await startTestApp(t, { actors: ['converter'] });
  const r = await app.request('GET', '/v1/services/websitepro');
  t.equal(r.status, 200);
  t.same(
    r.json.outputs.map((o: any) => o.id),
    ['metadata', 'markdown', 'text', 'html', 'links', 'images', 'pdf', 'rawHtml'],
  );
  t.equal(r.json.instances.length, 1);
  t.match(r.json.prices, [{ key: 'metadata' }]);
});
