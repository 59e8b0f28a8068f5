// One-off measurement of the crawl parts' own costs (not a timed test; a few seconds):
//   node scripts/crawl-parts.ts
// - detectWall on a real-size article page, a thin login page and a 10 MB page (the converter's main thread runs it once per job);
// - Frontier.admit on a throwaway nats-server: new URLs (5 writes/reads each) and duplicates (1 read);
// - uniqueKey per URL.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { detectWall } from '../shared/crawl/walls.ts';
import { Frontier } from '../shared/crawl/frontier.ts';
import { uniqueKey } from '../shared/crawl/normalize.ts';
import { startNatsServer } from '../shared/nats/server.ts';
import { connectNats } from '../shared/nats/connect.ts';

const fixture = (n: string) => readFileSync(new URL(`../test/fixtures/walls/${n}`, import.meta.url));
const time = (label: string, n: number, fn: () => unknown) => {
  fn();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) fn();
  const ms = (performance.now() - t0) / n;
  console.log(`${label.padEnd(44)} ${ms.toFixed(3)} ms`);
};
const H = { 'content-type': 'text/html' };
time('detectWall, article 12 KB (not a wall)', 500, () =>
  detectWall({ status: 200, headers: H, body: fixture('article-with-login-box.html'), contentType: 'text/html' }),
);
time('detectWall, login page (a wall)', 500, () =>
  detectWall({ status: 200, headers: H, body: fixture('login-form.html'), contentType: 'text/html' }),
);
const big = Buffer.from(`<html><head><title>x</title></head><body>${'<p>Some words of an article here.</p>'.repeat(300000)}</body></html>`);
time(`detectWall, ${(big.length / 1e6).toFixed(1)} MB page (first 512 KB read)`, 20, () =>
  detectWall({ status: 200, headers: H, body: big, contentType: 'text/html' }),
);
time('uniqueKey', 20000, () => uniqueKey('https://Example.com:443/docs/intro/?utm_source=x&b=2&a=1#top'));

const dir = mkdtempSync(join(tmpdir(), 'crawl-parts-'));
const server = await startNatsServer({ storeDir: dir, port: -1, startTimeoutMs: 60000 });
const nc = await connectNats(server.url, 'crawl-parts');
try {
  const f = await Frontier.open(nc);
  const N = 2000;
  let t0 = performance.now();
  for (let i = 0; i < N; i++) await f.admit('job_m', { url: `https://e.com/p/${i}`, depth: 1 }, 10000);
  let s = (performance.now() - t0) / 1000;
  console.log(`${'Frontier.admit, new URLs (sequential)'.padEnd(44)} ${(N / s).toFixed(0)} /s`);
  t0 = performance.now();
  for (let i = 0; i < N; i++) await f.admit('job_m', { url: `https://e.com/p/${i}`, depth: 1 }, 10000);
  s = (performance.now() - t0) / 1000;
  console.log(`${'Frontier.admit, duplicates (sequential)'.padEnd(44)} ${(N / s).toFixed(0)} /s`);
  t0 = performance.now();
  await Promise.all(
    Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; i < N / 8; i++) await f.admit('job_c', { url: `https://e.com/c/${w}/${i}`, depth: 1 }, 10000);
    }),
  );
  s = (performance.now() - t0) / 1000;
  console.log(`${'Frontier.admit, new URLs (8 concurrent)'.padEnd(44)} ${(N / s).toFixed(0)} /s`);
} finally {
  await nc.close();
  await server.destroy();
  rmSync(dir, { recursive: true, force: true });
}
