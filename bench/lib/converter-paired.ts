// Paired in-process measure of convert() against the converter of an earlier commit: the earlier
// actors/converter is written out of git into .tmp/ (ignored), both are loaded into one process
// and run in alternating rounds over the bench pages of bench/converter.ts (metadata + markdown,
// one thread), CPU time per round. Less noisy on a shared machine than two processes measured one
// after the other: both halves of each pair see the same load.
//   node --import tsx bench/lib/converter-paired.ts <commit> [rounds]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { convert, mediaType, type ConvertInput } from '../../actors/converter/convert.ts';
import { benchPages } from '../../test/converter/pages.ts';
import { loadCorpus, pageBytes } from '../../test/converter/corpus.ts';

const rev = process.argv[2];
if (!rev) throw new Error('usage: converter-paired.ts <commit> [rounds]');
const rounds = Number(process.argv[3] ?? 8);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' });
const sha = git('rev-parse', '--short', rev).trim();
// inside the repository, so the copy finds node_modules (its other imports are types only)
const dir = path.join(root, '.tmp', `converter-${sha}`, 'actors', 'converter');
fs.mkdirSync(dir, { recursive: true });
for (const f of git('ls-tree', '--name-only', sha, 'actors/converter/').split('\n').filter(Boolean))
  fs.writeFileSync(path.join(dir, path.basename(f)), git('show', `${sha}:${f}`));
const earlier = (await import(path.join(dir, 'convert.ts'))) as { convert: typeof convert };

// the pages of bench/converter.ts: UTF-8 HTML of the corpus (no 5 MB, no JavaScript page) and the older bench pages
const corpus = loadCorpus().filter(
  (e) =>
    mediaType(e.headers['content-type'] ?? '') === 'text/html' &&
    !e.browser &&
    !e.headers['content-encoding'] &&
    /utf-8/i.test(e.headers['content-type'] ?? ''),
);
const pages = [...benchPages().map((p) => Buffer.from(p)), ...corpus.map((e) => pageBytes(e))];
const input = (body: Buffer): ConvertInput => ({
  body,
  contentType: 'text/html; charset=utf-8',
  status: 200,
  url: 'http://127.0.0.1/page',
  finalUrl: 'http://127.0.0.1/page',
  redirects: [],
  rendered: false,
  detectJs: true,
  outputs: ['metadata', 'markdown'],
});
const round = async (f: typeof convert) => {
  const t = process.cpuUsage();
  for (const b of pages) await f(input(b));
  const d = process.cpuUsage(t);
  return pages.length / ((d.user + d.system) / 1e6);
};
await round(earlier.convert);
await round(convert);
const was: number[] = [],
  now: number[] = [];
for (let r = 0; r < rounds; r++) {
  // alternate which goes first, so neither always follows the other's garbage
  if (r % 2) {
    now.push(await round(convert));
    was.push(await round(earlier.convert));
  } else {
    was.push(await round(earlier.convert));
    now.push(await round(convert));
  }
}
const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
const f1 = (a: number[]) => a.map((x) => x.toFixed(1)).join(' ');
console.log(`${pages.length} pages a round, ${rounds} rounds each, pages per CPU-second`);
console.log(`${sha}: ${f1(was)} (mean ${mean(was).toFixed(1)})`);
console.log(`working tree: ${f1(now)} (mean ${mean(now).toFixed(1)})`);
console.log(
  `ratio per pair: ${now.map((x, i) => (x / was[i]!).toFixed(2)).join(' ')}; ratio of means ${(mean(now) / mean(was)).toFixed(2)}`,
);
