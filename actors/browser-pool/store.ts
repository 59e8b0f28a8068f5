// Files into the object store: the PNG under the task's object name and a WebP thumbnail beside it.
import { setSha256Backend } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/nats-core';
import sharp from 'sharp';
import { thumbName, type StoredFile } from '../../shared/protocol/jobs.ts';
import type { RawImage } from './capture.ts';
import type { PhaseTimes } from './pool.ts';
import { putObject } from '../../shared/nats/objects.ts';

// The object store client hashes every object it reads (SHA-256, to check the digest) on this
// thread, by default in pure JavaScript (the client also runs in browsers); Node's own is many
// times faster, and a PNG of a few MB hashed in JS held the thread the next shot's thumbnail and CDP
// messages need. Writes go through shared/nats/objects.ts, which hashes with node:crypto; reads
// (compare.ts) still go through the client. Process-wide (the client has one setting); the digest
// is the same either way.
setSha256Backend('native');

export const THUMB_WIDTH = 400;
/** Thumbnails of tall full-page shots keep the top, at most this many pixels high. */
export const THUMB_MAX_HEIGHT = 1000;

/** A WebP thumbnail (`width` wide, never enlarged) from the image, or from its already decoded pixels. */
export async function makeThumb(png: Buffer, raw?: RawImage, width = THUMB_WIDTH): Promise<Buffer> {
  const src = raw ? sharp(raw.data, { raw: raw.info }) : sharp(png);
  const meta = raw ? raw.info : await sharp(png).metadata();
  const w = meta.width ?? width;
  const h = meta.height ?? width;
  const tw = Math.min(width, w);
  const th = Math.max(1, Math.min(THUMB_MAX_HEIGHT, Math.round((h * tw) / w)));
  return src.resize({ width: tw, height: th, fit: 'cover', position: 'top' }).webp({ quality: 72 }).toBuffer();
}

/** Writes files to object stores: no store is opened (a missing one refuses the publish, and the put throws). */
export class Stores {
  private readonly nc: NatsConnection;
  constructor(nc: NatsConnection) {
    this.nc = nc;
  }
  /** In one round trip's time (shared/nats/objects.ts); a re-put replaces the object. */
  async put(store: string, name: string, data: Uint8Array): Promise<void> {
    await putObject(this.nc, store, { name }, data);
  }
}

/**
 * Store a screenshot and its thumbnail; the StoredFile the outcome carries. `png`: the file (a PNG
 * unless `opts.contentType` says otherwise); `raw`: its pixels, for the thumbnail.
 */
export async function storeShot(
  stores: Stores,
  t: { store: string; objectName: string; jobId: string; resultKey: string },
  png: Buffer,
  raw?: RawImage,
  times?: PhaseTimes,
  opts: { contentType?: string; thumbWidth?: number } = {},
): Promise<StoredFile> {
  const tn = thumbName(t.jobId, t.resultKey);
  // the PNG uploads while the thumbnail is encoded (sharp works on its own threads)
  const t0 = performance.now();
  const pngStored = stores.put(t.store, t.objectName, png);
  pngStored.catch(() => {});
  const thumb = await makeThumb(png, raw, opts.thumbWidth);
  times?.add('thumbnail', performance.now() - t0);
  const t1 = performance.now();
  await Promise.all([stores.put(t.store, tn, thumb), pngStored]);
  times?.add('upload (after the thumbnail)', performance.now() - t1);
  return {
    store: t.store,
    name: t.objectName,
    contentType: opts.contentType ?? 'image/png',
    bytes: png.length,
    filename: t.resultKey,
    thumb: { name: tn, contentType: 'image/webp', bytes: thumb.length },
  };
}
