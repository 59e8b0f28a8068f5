// shots options.compare through the gateway, wallet, supervisor, test shot workers and the real
// compare worker: priced per pair in quote and pricing, each diff released once its two shots are
// stored, a diff whose shot failed is refunded, bad combinations refused.
import t from 'tap';
import sharp from 'sharp';
import { startJobsApi } from './app.ts';
import { testLog } from '../helpers/nats.ts';
import { startCompareWorker } from '../../actors/browser-pool/compare.ts';

const versions = { id: 'testbrowser', versions: ['2', '1'] };
const diffKey = 'diff_testbrowser-2_vs_testbrowser-1_1920x1080_light.png';

async function system(t: { teardown(fn: () => unknown): void }) {
  const s = await startJobsApi(t);
  const w = await startCompareWorker({ nc: await s.connect('compare'), config: s.config, log: testLog() });
  t.teardown(() => w.stop());
  return s;
}

t.test('a pair: priced, released after both shots, 0 % for identical shots, the diff PNG downloadable', async (t) => {
  const s = await system(t);
  const k = await s.newWallet(1000);
  const body = { url: s.targetUrl, browsers: [versions], options: { compare: true } };
  const pricing = await s.request('GET', '/v1/pricing');
  const pair = pricing.json.services.shots.items.find((i: { key: string }) => i.key === 'comparePair');
  t.match(pair, { key: 'comparePair', payloads: 20 });
  const q = await s.request('POST', '/v1/shots/quote', { key: k.key, body });
  t.equal(q.status, 200, q.text);
  t.same(
    q.json.items.map((i: { key: string; price: number }) => [i.key, i.price]),
    [
      ['testbrowser-2_1920x1080_light.png', 50],
      ['testbrowser-1_1920x1080_light.png', 50],
      [diffKey, 20],
    ],
  );
  const c = await s.request('POST', '/v1/shots/jobs?wait=20', { key: k.key, body });
  t.equal(c.status, 201, c.text);
  let job = c.json.job;
  if (job.status !== 'completed') job = (await s.request('GET', `/v1/jobs/${job.id}?wait=20`, { key: k.key })).json.job;
  t.equal(job.status, 'completed');
  t.equal(job.charged, 120);
  const diff = job.results.find((r: { key: string }) => r.key === diffKey);
  t.match(diff, {
    status: 'done',
    contentType: 'image/png',
    compare: {
      a: 'testbrowser-2_1920x1080_light.png',
      b: 'testbrowser-1_1920x1080_light.png',
      differentPercent: 0,
      perceptualPercent: 0,
      regions: [],
    },
  });
  const png = Buffer.from(await (await fetch(diff.url, { headers: { authorization: `Bearer ${k.key}` } })).arrayBuffer());
  t.match(await sharp(png).metadata(), { format: 'png', width: 8, height: 6 }, "the test worker's shots are 8x6");
  t.equal(await s.balance(k.walletId), 1000 - 120);
});

t.test('a shot that fails: its diff fails too, both refunded', async (t) => {
  const s = await system(t);
  const k = await s.newWallet(1000);
  const c = await s.request('POST', '/v1/shots/jobs?wait=20', {
    key: k.key,
    body: { url: `${s.targetUrl}/?behave.testbrowser-1_1920x1080_light.png=fail`, browsers: [versions], options: { compare: true } },
  });
  let job = c.json.job;
  if (job.status !== 'completed') job = (await s.request('GET', `/v1/jobs/${job.id}?wait=20`, { key: k.key })).json.job;
  t.equal(job.status, 'completed', 'one shot was delivered');
  const diff = job.results.find((r: { key: string }) => r.key === diffKey);
  t.match(diff, { status: 'failed', error: 'not_delivered', refunded: true });
  t.equal(job.refunded, 70);
  t.equal(await s.balance(k.walletId), 1000 - 50);
});

t.test('compare needs a pair of the same viewport and scheme; one pair per viewport and scheme', async (t) => {
  const s = await system(t);
  const k = await s.newWallet(1000);
  const one = await s.request('POST', '/v1/shots/quote', {
    key: k.key,
    body: { url: s.targetUrl, browsers: ['testbrowser'], schemes: ['light', 'dark'], options: { compare: true } },
  });
  t.match(one, {
    status: 400,
    json: { error: { code: 'bad_request', message: /at least two screenshots of the same viewport and scheme/ } },
  });
  const two = await s.request('POST', '/v1/shots/quote', {
    key: k.key,
    body: { url: s.targetUrl, browsers: [versions], viewports: ['fhd', 'hd'], schemes: ['light', 'dark'], options: { compare: true } },
  });
  t.same(two.json.items.filter((i: { key: string }) => i.key.startsWith('diff_')).length, 4, 'one pair per viewport and scheme');
  const bad = await s.request('POST', '/v1/shots/quote', {
    key: k.key,
    body: { url: s.targetUrl, browsers: ['testbrowser'], options: { compare: 'yes' } },
  });
  t.equal(bad.status, 400);
});
