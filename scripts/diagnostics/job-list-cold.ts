// What a job list costs the supervisor when its projection's pages are not in memory (issue 26):
//   node --import tsx scripts/diagnostics/job-list-cold.ts <DATA_DIR>/job-supervisor/jobs.sqlite [lists]
// Opens the projection file read-only, drops the page cache (root), then times `lists` (300) job
// lists of 30 with their documents for random wallets, and the same with ids only, printing
// p50/p90/p99/max in ms. better-sqlite3 reads are synchronous: this is how long a cold list holds
// the event loop. Only for the layout it was written for (actors/job-supervisor/projection.ts).
import Database from 'better-sqlite3';
import { writeFileSync } from 'node:fs';
import { DOC_OF_ROW } from '../../actors/job-supervisor/kept-docs.ts';

const [file, lists = '300'] = process.argv.slice(2);
if (!file) {
  console.error('usage: job-list-cold.ts <jobs.sqlite> [lists]');
  process.exit(2);
}
const db = new Database(file, { readonly: true, fileMustExist: true });
const layout = db.prepare(`SELECT v FROM meta WHERE k = 'layout'`).pluck().get();
if (layout !== '7') {
  console.error(`layout ${String(layout)}: this script reads layout 7`);
  process.exit(2);
}
const wallets = db.prepare('SELECT DISTINCT wallet_id FROM jobs ORDER BY wallet_id LIMIT 100000').pluck().all() as string[];
const queries = {
  'ids and documents': db.prepare(
    `SELECT jobs.id, docs.doc FROM jobs LEFT JOIN docs ON ${DOC_OF_ROW} WHERE jobs.wallet_id = ? ORDER BY jobs.created_at DESC, jobs.id DESC LIMIT 30`,
  ),
  'ids only': db.prepare('SELECT id FROM jobs WHERE wallet_id = ? ORDER BY created_at DESC, id DESC LIMIT 30'),
};
const pct = (xs: number[], p: number) => xs[Math.floor(((xs.length - 1) * p) / 100)]!.toFixed(2);
for (const [name, q] of Object.entries(queries)) {
  writeFileSync('/proc/sys/vm/drop_caches', '3');
  const ms: number[] = [];
  for (let i = 0; i < Number(lists); i++) {
    const w = wallets[Math.floor(Math.random() * wallets.length)];
    const t0 = performance.now();
    q.all(w);
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  console.log(
    `${name}: ${ms.length} lists over ${wallets.length} wallets, cold: p50 ${pct(ms, 50)} p90 ${pct(ms, 90)} p99 ${pct(ms, 99)} max ${ms.at(-1)!.toFixed(2)} ms`,
  );
}
