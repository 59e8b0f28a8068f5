// Shots stored in the object store come back byte for byte (the client checks each object's
// SHA-256 on the way out), hashed with Node's own SHA-256: the client's default is a pure
// JavaScript one that held this thread ~55 ms per 2 MB PNG.
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { Objm, getSha256Backend } from '@nats-io/obj';
import { startTestNats } from '../helpers/nats.ts';
import { Stores, storeShot } from '../../actors/browser-pool/store.ts';
import { thumbName } from '../../shared/protocol/jobs.ts';

t.test('a stored shot and its thumbnail read back intact, hashed natively', async (t) => {
  t.equal(getSha256Backend(), 'native');
  const tn = await startTestNats(t);
  // noise does not compress: a PNG of a few MB, as a full-page shot of a real site is
  const png = await sharp(randomBytes(900 * 900 * 3), { raw: { width: 900, height: 900, channels: 3 } })
    .png()
    .toBuffer();
  t.ok(png.length > 2 * 1024 * 1024, `PNG of ${png.length} bytes`);
  await new Objm(tn.nc).create('shots-store-test');
  const task = { store: 'shots-store-test', objectName: 'job1/a.png', jobId: 'job1', resultKey: 'a.png' };
  const file = await storeShot(new Stores(tn.nc), task, png);
  t.match(file, { name: 'job1/a.png', bytes: png.length, thumb: { contentType: 'image/webp' } });
  const os = await new Objm(tn.nc).open(task.store);
  const back = await os.getBlob('job1/a.png');
  t.ok(back && Buffer.from(back).equals(png), 'the PNG, byte for byte, its digest checked by the client');
  const info = await os.info('job1/a.png');
  t.equal(
    Buffer.from(info!.digest.slice('SHA-256='.length), 'base64url').toString('hex'),
    createHash('sha256').update(png).digest('hex'),
    'the stored digest is the SHA-256 of the PNG',
  );
  const thumb = await os.getBlob(thumbName('job1', 'a.png'));
  t.match(await sharp(Buffer.from(thumb!)).metadata(), { format: 'webp', width: 400 });
});
