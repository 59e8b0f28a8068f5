// shared/nats/objects.ts: putObject stores what the library's putBlob stores (its own get/info/list
// read it), in one round trip's time: no JetStream API request, chunks and meta pipelined. A refused
// publish throws and leaves no meta pointing at missing chunks.
import t from 'tap';
import { Objm, type ObjectInfo, type ObjectStore } from '@nats-io/obj';
import { headers } from '@nats-io/nats-core';
import { startTestNats } from '../helpers/nats.ts';
import { putObject } from '../../shared/nats/objects.ts';

const KiB = 1024;
const CHUNK = 128 * KiB;
const bytesOf = (n: number, seed = 1) => {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed * 7 + (i >> 8)) & 0xff;
  return b;
};
/** The meta fields a put decides (not the ones that differ per put by design). */
const fields = (i: ObjectInfo) => ({
  name: i.name,
  size: i.size,
  chunks: i.chunks,
  digest: i.digest,
  description: i.description,
  options: i.options,
  metadata: i.metadata,
  headers: Object.fromEntries(i.headers ? i.headers.keys().map((k) => [k, i.headers!.values(k)]) : []),
  deleted: i.deleted,
});

const tn = await startTestNats(t);
const objm = new Objm(tn.nc);
const ours = await objm.create('put-ours');
const lib = await objm.create('put-lib');

const sizes: [string, number][] = [
  ['empty', 0],
  ['small', 11],
  ['exactly one chunk', CHUNK],
  ['one chunk and a byte', CHUNK + 1],
  ['multi-chunk', 3 * CHUNK + 5],
  ['multi-MB', 5 * 1024 * KiB + 3],
];

t.test('round trip through the library: the same meta putBlob writes, the same bytes back', async (t) => {
  for (const [what, n] of sizes) {
    const data = bytesOf(n, n);
    const h = headers();
    h.set('X-Kind', what);
    const meta = () => ({
      name: `obj/${what}`,
      description: 'application/octet-stream',
      metadata: { filename: `${what}.bin` },
      headers: h,
    });
    const put = await putObject(tn.nc, 'put-ours', meta(), data);
    await lib.putBlob(meta(), data);
    const [a, b] = [await ours.info(`obj/${what}`), await lib.info(`obj/${what}`)];
    t.ok(a && b, `${what}: info found`);
    t.same(fields(a!), fields(b!), `${what}: meta as putBlob's`);
    t.equal(a!.bucket, 'put-ours', `${what}: bucket`);
    t.equal(a!.nuid, put.nuid, `${what}: the returned nuid is the stored one`);
    t.equal(a!.revision, put.revision, `${what}: the returned revision is the meta's sequence`);
    t.ok(Date.now() - Date.parse(a!.mtime) < 60_000, `${what}: mtime now`);
    const got = await ours.getBlob(`obj/${what}`);
    t.ok(got && Buffer.from(got).equals(Buffer.from(data)), `${what}: getBlob returns the data (digest checked by the library)`);
  }
  const names = (await ours.list()).map((i) => i.name).sort();
  t.same(names, sizes.map(([w]) => `obj/${w}`).sort(), 'list shows every object once');
});

t.test('meta without options: max_chunk_size filled in as the library does; a given chunk size is used', async (t) => {
  await putObject(tn.nc, 'put-ours', { name: 'plain' }, bytesOf(10));
  await lib.putBlob({ name: 'plain' }, bytesOf(10));
  t.same(
    fields((await ours.info('plain'))!),
    fields((await lib.info('plain'))!),
    'same meta (description "", options.max_chunk_size 131072, no metadata)',
  );
  const data = bytesOf(100 * KiB + 1);
  await putObject(tn.nc, 'put-ours', { name: 'small-chunks', options: { max_chunk_size: 10 * KiB } }, data);
  await lib.putBlob({ name: 'small-chunks', options: { max_chunk_size: 10 * KiB } }, data);
  const a = (await ours.info('small-chunks'))!;
  t.equal(a.chunks, 11, '11 chunks of at most 10 KiB');
  t.same(fields(a), fields((await lib.info('small-chunks'))!), 'same meta');
  t.ok(Buffer.from((await ours.getBlob('small-chunks'))!).equals(Buffer.from(data)), 'same bytes back');
});

t.test('a re-put under the same name replaces the object: new data back, one list entry', async (t) => {
  const st = await objm.create('put-reput');
  await putObject(tn.nc, 'put-reput', { name: 'r' }, bytesOf(3 * CHUNK, 1));
  await putObject(tn.nc, 'put-reput', { name: 'r' }, bytesOf(10, 2));
  t.ok(Buffer.from((await st.getBlob('r'))!).equals(Buffer.from(bytesOf(10, 2))), 'the new data');
  t.equal((await st.list()).length, 1, 'one entry');
  // mixed with the library's put, both ways
  await st.putBlob({ name: 'r' }, bytesOf(2 * CHUNK, 3));
  await putObject(tn.nc, 'put-reput', { name: 'r' }, bytesOf(CHUNK + 7, 4));
  t.ok(Buffer.from((await st.getBlob('r'))!).equals(Buffer.from(bytesOf(CHUNK + 7, 4))), 'over a putBlob object');
  await st.putBlob({ name: 'r' }, bytesOf(5, 5));
  t.ok(Buffer.from((await st.getBlob('r'))!).equals(Buffer.from(bytesOf(5, 5))), 'putBlob over it');
  t.equal((await st.list()).length, 1, 'still one entry');
  // the library's delete of an object putObject wrote
  await putObject(tn.nc, 'put-reput', { name: 'r' }, bytesOf(50, 6));
  await st.delete('r');
  t.equal(await st.get('r'), null, 'deleted by the library');
});

t.test('a large object pipelined in a bounded window round-trips', async (t) => {
  const data = bytesOf(3 * 1024 * KiB + 17, 9);
  await putObject(tn.nc, 'put-ours', { name: 'windowed' }, data, { windowBytes: 300 * KiB });
  t.ok(Buffer.from((await ours.getBlob('windowed'))!).equals(Buffer.from(data)), 'data back');
  t.equal((await ours.info('windowed'))!.chunks, 25, '25 chunks');
});

t.test('no JetStream API request per put (putBlob made one: the old meta read)', async (t) => {
  const spy = await tn.connect('spy');
  let api: string[] = [];
  spy.subscribe('$JS.API.>', { callback: (_e, m) => void api.push(m.subject) });
  await spy.flush();
  const settled = async () => {
    await tn.nc.flush();
    await spy.flush();
    const seen = api;
    api = [];
    return seen;
  };
  // warm both paths (the library's first use of a connection may ask for more)
  await putObject(tn.nc, 'put-ours', { name: 'count' }, bytesOf(10));
  await lib.putBlob({ name: 'count' }, bytesOf(10));
  await settled();
  for (const n of [0, 10, 3 * CHUNK]) {
    await putObject(tn.nc, 'put-ours', { name: 'count' }, bytesOf(n));
    t.same(await settled(), [], `putObject of ${n} bytes: none`);
    await lib.putBlob({ name: 'count' }, bytesOf(n));
    t.ok((await settled()).length >= 1, `putBlob of ${n} bytes: at least one (the test tells them apart)`);
  }
});

t.test('a refused put throws', async (t) => {
  await t.test('the store is gone', async (t) => {
    const st = await objm.create('put-gone');
    await st.destroy();
    await t.rejects(putObject(tn.nc, 'put-gone', { name: 'x' }, bytesOf(10), { timeout: 2000 }), 'small');
    await t.rejects(putObject(tn.nc, 'put-gone', { name: 'x' }, bytesOf(3 * CHUNK), { timeout: 2000 }), 'multi-chunk');
  });
  await t.test('the store is too small (max_bytes): no meta left pointing at missing chunks', async (t) => {
    const st: ObjectStore = await objm.create('put-tiny', { max_bytes: 200 * KiB });
    // a chunk refused in the middle: chunk 1 fits, 2 does not, 3 and the meta would
    await t.rejects(putObject(tn.nc, 'put-tiny', { name: 'big' }, bytesOf(2 * CHUNK + 10 * KiB)), 'refused in the middle');
    const info = await st.info('big');
    t.ok(info === null || info.deleted, 'no live meta for the refused object');
    t.equal(await st.get('big'), null, 'get finds nothing (not a corrupt object)');
    t.ok((await st.status()).size < KiB, 'its chunks purged (at most a deletion marker left)');
    await t.rejects(
      putObject(tn.nc, 'put-tiny', { name: 'huge' }, bytesOf(300 * KiB), { windowBytes: CHUNK }),
      'refused with one chunk in flight',
    );
    t.equal(await st.get('huge'), null, 'nothing stored');
    const ok = await putObject(tn.nc, 'put-tiny', { name: 'fits' }, bytesOf(20 * KiB));
    t.ok(ok.revision > 0, 'a put that fits still works');
    t.ok(Buffer.from((await st.getBlob('fits'))!).equals(Buffer.from(bytesOf(20 * KiB))), 'and reads back');
  });
  await t.test('bad arguments', async (t) => {
    await t.rejects(putObject(tn.nc, 'put-ours', { name: '' }, bytesOf(1)), /name cannot be empty/);
    await t.rejects(putObject(tn.nc, 'bad.bucket', { name: 'x' }, bytesOf(1)), /invalid bucket/);
    await t.rejects(putObject(tn.nc, 'put-ours', { name: 'x', options: { link: { bucket: 'b' } } }, bytesOf(1)), /link/);
  });
});
