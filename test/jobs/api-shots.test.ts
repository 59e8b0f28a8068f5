// Shots downloads: thumbnails and the zip (real HTTP, wallet, supervisor, test workers).
import t from 'tap';
import { Objm } from '@nats-io/obj';
import { startJobsApi } from './app.ts';
import { OBJECT_STORES } from '../../shared/names.ts';

t.test('shots: thumbnails, zip of all screenshots, 409 before completion, 404 for other services', async (t) => {
  const s = await startJobsApi(t);
  const { key } = await s.newWallet(5000);
  const body = { url: s.targetUrl, browsers: [{ id: 'testbrowser', versions: ['2', '1'] }], schemes: ['light', 'dark'] };
  const r = await s.request('POST', '/v1/shots/jobs?wait=20', { key, body });
  t.equal(r.status, 201, r.text);
  const job = r.json.job;
  t.equal(job.status, 'completed');
  t.equal(job.results.length, 4);
  for (const res of job.results) {
    t.equal(res.contentType, 'image/png');
    t.equal(res.filename, res.key);
    t.equal(res.thumbUrl, `${res.url}?thumb=1`);
  }
  const first = job.results[0];
  const png = await fetch(s.url + new URL(first.url).pathname, { headers: { authorization: `Bearer ${key}` } });
  const pngBytes = Buffer.from(await png.arrayBuffer());
  t.equal(png.headers.get('content-type'), 'image/png');
  t.same([...pngBytes.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], 'a PNG');
  const th = await fetch(s.url + new URL(first.thumbUrl).pathname + '?thumb=1', { headers: { authorization: `Bearer ${key}` } });
  t.equal(th.headers.get('content-type'), 'image/webp');
  t.equal(
    Buffer.from(await th.arrayBuffer())
      .subarray(8, 12)
      .toString(),
    'WEBP',
  );

  const zip = await fetch(`${s.url}/v1/jobs/${job.id}/zip`, { headers: { authorization: `Bearer ${key}` } });
  t.equal(zip.status, 200);
  t.equal(zip.headers.get('content-type'), 'application/zip');
  const { readZip } = await import('./app.ts');
  const entries = readZip(Buffer.from(await zip.arrayBuffer()));
  t.same(entries.map((e) => e.name).sort(), job.results.map((x: { key: string }) => x.key).sort());
  const os = await new Objm(s.nc).open(OBJECT_STORES.results);
  for (const e of entries) {
    t.equal(e.method, 0, 'stored, PNGs do not compress');
    t.same(e.data, Buffer.from((await os.getBlob(`${job.id}/${e.name}`))!), `${e.name} is the stored file`);
  }

  const pending = await s.request('POST', '/v1/shots/jobs', { key, body: { ...body, url: `${s.targetUrl}/?behave=hang` } });
  t.equal((await s.request('GET', `/v1/jobs/${pending.json.job.id}/zip`, { key })).json.error.code, 'not_ready');
  const wp = await s.request('POST', '/v1/websitepro/jobs?wait=10', { key, body: { url: s.targetUrl, outputs: ['text'] } });
  t.equal((await s.request('GET', `/v1/jobs/${wp.json.job.id}/zip`, { key })).status, 404);
});
