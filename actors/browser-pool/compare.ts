// Cross-browser differences (shots `options.compare`): one task per pair of screenshots of the same
// viewport and scheme, released by the supervisor once both are stored. pixelmatch compares them
// (sharp decodes, crops to the common size and encodes); the diff image shows the differing pixels
// in red over a faded copy of the first shot, and the summary goes on the result.
import sharp from 'sharp';
import pixelmatch from 'pixelmatch';
import { Objm } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/nats-core';
import { CONSUMERS, subjects } from '../../shared/names.ts';
import { TaskFailure } from '../../shared/protocol/jobs.ts';
import { runWorker, storeResultFile, type TaskContext } from '../../shared/worker.ts';
import type { Config } from '../../shared/config/index.ts';
import type { Logger } from '../../shared/log.ts';

/** pixelmatch's colour-distance threshold for the perceptual score (its default; anti-aliasing ignored). */
export const PERCEPTUAL_THRESHOLD = 0.1;
/** Differing pixels are grouped into regions on a grid of this many CSS pixels. */
const CELL = 16;
const MAX_REGIONS = 5;
const DIFF_RGB: [number, number, number] = [255, 0, 0];

export interface Region {
  x: number;
  y: number;
  w: number;
  h: number;
  pixels: number;
}

export interface CompareSummary {
  a: string;
  b: string;
  /** The compared area: the common width and height of both shots. */
  width: number;
  height: number;
  /** Sizes of both shots; rows or columns outside the common area are not compared. */
  sizes: { a: { width: number; height: number }; b: { width: number; height: number } };
  uncompared: { rowsA: number; rowsB: number; columnsA: number; columnsB: number };
  /** Pixels that differ at all (any channel). */
  differentPixels: number;
  differentPercent: number;
  /** Pixels that differ beyond pixelmatch's threshold, anti-aliasing not counted. */
  perceptualPixels: number;
  perceptualPercent: number;
  /** The largest groups of perceptually differing pixels, biggest first. */
  regions: Region[];
}

const pct = (n: number, of: number) => (of ? Math.round((10000 * n) / of) / 100 : 0);

async function rgba(png: Uint8Array, width: number, height: number): Promise<Buffer> {
  return sharp(png).ensureAlpha().extract({ left: 0, top: 0, width, height }).raw().toBuffer();
}

/** Boxes around the cells that hold differing pixels, cells joined when they touch (8 neighbours). */
export function diffRegions(diff: Uint8Array, width: number, height: number, cell = CELL): Region[] {
  const cols = Math.ceil(width / cell);
  const rows = Math.ceil(height / cell);
  const count = new Uint32Array(cols * rows);
  for (let i = 0, p = 0; p < width * height; p++, i += 4) {
    if (diff[i] === DIFF_RGB[0] && diff[i + 1] === DIFF_RGB[1] && diff[i + 2] === DIFF_RGB[2])
      count[Math.floor(p / width / cell) * cols + Math.floor((p % width) / cell)]!++;
  }
  const seen = new Uint8Array(cols * rows);
  const regions: Region[] = [];
  for (let start = 0; start < count.length; start++) {
    if (!count[start] || seen[start]) continue;
    let [x0, y0, x1, y1, pixels] = [Infinity, Infinity, -1, -1, 0];
    const stack = [start];
    seen[start] = 1;
    while (stack.length) {
      const c = stack.pop()!;
      const cx = c % cols;
      const cy = Math.floor(c / cols);
      x0 = Math.min(x0, cx);
      y0 = Math.min(y0, cy);
      x1 = Math.max(x1, cx);
      y1 = Math.max(y1, cy);
      pixels += count[c]!;
      for (let dy = -1; dy <= 1; dy++) {
        for (let dx = -1; dx <= 1; dx++) {
          const nx = cx + dx;
          const ny = cy + dy;
          if (nx < 0 || ny < 0 || nx >= cols || ny >= rows) continue;
          const n = ny * cols + nx;
          if (count[n] && !seen[n]) {
            seen[n] = 1;
            stack.push(n);
          }
        }
      }
    }
    const x = x0 * cell;
    const y = y0 * cell;
    regions.push({ x, y, w: Math.min(width, (x1 + 1) * cell) - x, h: Math.min(height, (y1 + 1) * cell) - y, pixels });
  }
  return regions.sort((p, q) => q.pixels - p.pixels).slice(0, MAX_REGIONS);
}

/** Compare two PNGs over their common size: the diff PNG and its summary. */
export async function comparePngs(
  a: Uint8Array,
  b: Uint8Array,
  labels: { a: string; b: string },
): Promise<{ png: Buffer; summary: CompareSummary }> {
  const [ma, mb] = await Promise.all([sharp(a).metadata(), sharp(b).metadata()]);
  const sa = { width: ma.width ?? 0, height: ma.height ?? 0 };
  const sb = { width: mb.width ?? 0, height: mb.height ?? 0 };
  const width = Math.min(sa.width, sb.width);
  const height = Math.min(sa.height, sb.height);
  if (!width || !height)
    throw new TaskFailure('not_comparable', `a screenshot has no pixels (${sa.width}x${sa.height}, ${sb.width}x${sb.height})`);
  const [ra, rb] = await Promise.all([rgba(a, width, height), rgba(b, width, height)]);
  // threshold 0 with anti-aliasing counted: every pixel that differs at all
  const differentPixels = pixelmatch(ra, rb, undefined, width, height, { threshold: 0, includeAA: true });
  const out = Buffer.alloc(width * height * 4);
  const perceptualPixels = pixelmatch(ra, rb, out, width, height, {
    threshold: PERCEPTUAL_THRESHOLD,
    alpha: 0.1,
    diffColor: DIFF_RGB,
    aaColor: [255, 255, 0],
  });
  const png = await sharp(out, { raw: { width, height, channels: 4 } })
    .png({ compressionLevel: 6 })
    .toBuffer();
  const area = width * height;
  return {
    png,
    summary: {
      ...labels,
      width,
      height,
      sizes: { a: sa, b: sb },
      uncompared: { rowsA: sa.height - height, rowsB: sb.height - height, columnsA: sa.width - width, columnsB: sb.width - width },
      differentPixels,
      differentPercent: pct(differentPixels, area),
      perceptualPixels,
      perceptualPercent: pct(perceptualPixels, area),
      regions: perceptualPixels ? diffRegions(out, width, height) : [],
    },
  };
}

/** What the supervisor puts in a compare task once both shots are stored. */
export interface CompareTaskParams {
  a: string;
  b: string;
  inputs?: { key: string; store: string; name: string }[];
}

async function readObject(nc: NatsConnection, store: string, name: string): Promise<Uint8Array> {
  const os = await new Objm(nc).open(store);
  const data = await os.getBlob(name);
  if (!data) throw new TaskFailure('not_delivered', `the screenshot ${name} is not in the store (expired?)`);
  return data;
}

export async function handleCompare(nc: NatsConnection, ctx: TaskContext) {
  const p = ctx.task.params as unknown as CompareTaskParams;
  const inputs = p.inputs ?? [];
  const ia = inputs.find((i) => i.key === p.a);
  const ib = inputs.find((i) => i.key === p.b);
  if (!ia || !ib) throw new TaskFailure('not_delivered', 'the compare task names no stored screenshots');
  await ctx.progress('comparing');
  const [a, b] = await Promise.all([readObject(nc, ia.store, ia.name), readObject(nc, ib.store, ib.name)]);
  const { png, summary } = await comparePngs(a, b, { a: p.a, b: p.b });
  const file = await storeResultFile(nc, ctx.task, png, { contentType: 'image/png', filename: ctx.task.resultKey });
  return { file, extra: { compare: summary } };
}

/** The compare worker: any browser-pool instance pulls `task.compare` from one shared consumer. */
export function startCompareWorker(o: { nc: NatsConnection; config: Config; log: Logger }) {
  return runWorker({
    nc: o.nc,
    config: o.config,
    log: o.log,
    consumer: CONSUMERS.compare,
    filterSubject: subjects.taskCompare,
    // CPU-bound on the event loop: one at a time keeps the shots' pages responsive
    concurrency: 1,
    handle: (ctx) => handleCompare(o.nc, ctx),
  });
}
