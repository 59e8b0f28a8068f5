// websitepro converter benchmark.
// Speed and memory: pages per CPU-second for metadata + markdown through the whole pipeline
// (JetStream task → converter actor → guarded fetch → worker thread → object store → outcome), the
// actor in a process of its own (bench/lib/converter-pipeline.ts, converter-actor.ts), against the libraries it is built on
// called directly the way their READMEs show (jsdom, Readability, turndown + GFM; same pages, as
// many threads as the converter's pool), also a child process of its own
// (bench/lib/converter-direct.ts). Peak RSS of each process is compared the same way.
// Quality: the corpus of test/fixtures/websitepro through convert(): pass rate (every check of
// test/converter/corpus.ts), and word-bag recall and precision of the text output against each
// page's expected main text, beside the same measures for Readability's own textContent.
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { JSDOM } from 'jsdom';
import { Readability } from '@mozilla/readability';
import { convert, mediaType } from '../actors/converter/convert.ts';
import { decodeBody } from '../actors/converter/charset.ts';
import { benchPages } from '../test/converter/pages.ts';
import { loadCorpus, pageBytes, judge, summary, overlap, type Produced } from '../test/converter/corpus.ts';
import { figure, quick, type BenchFigure } from './figure.ts';
import { runTs } from './lib/procs.ts';

interface Measured {
  perCore: number[];
  peakMb: number;
  wall?: number[];
  failed?: number;
}

/** UTF-8 HTML pages of the corpus (no 5 MB page, no JavaScript page) plus the older bench pages. */
function speedPages(): string[] {
  const corpus = loadCorpus().filter(
    (e) =>
      mediaType(e.headers['content-type'] ?? '') === 'text/html' &&
      !e.browser &&
      !e.headers['content-encoding'] &&
      /utf-8/i.test(e.headers['content-type'] ?? ''),
  );
  return [...benchPages(), ...corpus.map((e) => pageBytes(e).toString('utf8'))];
}

export async function run(): Promise<BenchFigure[]> {
  const threads = Math.max(1, Math.min(4, os.availableParallelism()));
  const pages = speedPages();
  const rounds = quick() ? 3 : 5;
  const perRound = quick() ? Math.min(pages.length, 24) : pages.length;
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bench-conv-')), 'pages.json');
  fs.writeFileSync(file, JSON.stringify({ pages, threads, rounds, perRound }));
  // alternate the two so a busy machine hurts both alike
  const direct: Measured[] = [];
  const piped: Measured[] = [];
  const runs = quick() ? 1 : 2;
  try {
    for (let i = 0; i < runs; i++) {
      direct.push(JSON.parse(lastLine(await runTs('converter-direct', 'bench/lib/converter-direct.ts', [file]))) as Measured);
      piped.push(JSON.parse(lastLine(await runTs('converter-pipeline', 'bench/lib/converter-pipeline.ts', [file]))) as Measured);
    }
  } finally {
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  }
  const failed = piped.reduce((n, m) => n + (m.failed ?? 0), 0);
  const quality = await corpusQuality();
  const q = summary(quality.ours);
  return [
    figure({
      name: 'websitepro pages/s per core (metadata+markdown)',
      unit: 'pages/s/core',
      samples: piped.flatMap((m) => m.perCore.map(round2)),
      baselineSamples: direct.flatMap((m) => m.perCore.map(round2)),
      note: `${perRound} pages per round (${pages.length} different: corpus HTML pages and the older bench pages), ${threads} thread(s) each; per core = pages per CPU-second of the process, all its threads; pipeline = the converter actor's own process (web server, harness playing the supervisor and nats-server not counted: other machines in production); baseline = jsdom + Readability + turndown/GFM called directly; pipeline wall-clock pages/s: ${piped
        .flatMap((m) => m.wall ?? [])
        .map(round2)
        .join(', ')}${failed ? `; ${failed} jobs failed` : ''}`,
    }),
    figure({
      name: 'websitepro converter peak RSS',
      unit: 'MB',
      samples: piped.map((m) => round2(m.peakMb)),
      baselineSamples: direct.map((m) => round2(m.peakMb)),
      note: `peak VmRSS of the converter actor's process against the direct-libraries process, ${threads} thread(s) each, same pages`,
    }),
    figure({
      name: 'websitepro corpus pass rate',
      unit: 'share of pages',
      samples: [round3(q.passRate)],
      baselineSamples: [1],
      note: `${q.passed} of ${q.pages} corpus pages pass every check (convert() directly; the JavaScript page is judged in test/converter/corpus.test.ts with Chromium); baseline 1 = all`,
    }),
    figure({
      name: 'websitepro corpus text recall',
      unit: 'recall',
      samples: [round3(q.recall)],
      baselineSamples: [round3(quality.readability.recall)],
      note: 'word-bag recall of the text output against the expected main text; baseline: Readability textContent on the same pages',
    }),
    figure({
      name: 'websitepro corpus text precision',
      unit: 'precision',
      samples: [round3(q.precision)],
      baselineSamples: [round3(quality.readability.precision)],
      note: 'word-bag precision of the text output against the expected main text; baseline: Readability textContent on the same pages',
    }),
  ];
}

async function corpusQuality() {
  const ours: ReturnType<typeof judge>[] = [];
  const ref: { recall: number; precision: number }[] = [];
  for (const e of loadCorpus()) {
    let body = pageBytes(e);
    if (e.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
    const url = `https://corpus.example/${e.id}`;
    const out: Produced = {};
    const r = await convert({
      body,
      contentType: e.headers['content-type'] ?? '',
      status: 200,
      url,
      finalUrl: url,
      redirects: [],
      rendered: false,
      outputs: ['metadata', 'markdown', 'text', 'html'],
    });
    if (r.needsJavaScript) continue;
    for (const [k, v] of Object.entries(r.outputs)) out[k as 'text'] = v.ok ? { data: v.data } : { error: v.error, message: v.message };
    ours.push(judge(e, out, !e.browser));
    if (mediaType(e.headers['content-type'] ?? '').includes('html') && !e.browser) {
      const dom = new JSDOM(decodeBody(body, e.headers['content-type']).text, { url });
      const a = new Readability(dom.window.document).parse();
      dom.window.close();
      ref.push(overlap(`${a?.title ?? ''}\n${a?.textContent ?? ''}`, e.expected));
    }
  }
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  return { ours, readability: { recall: avg(ref.map((x) => x.recall)), precision: avg(ref.map((x) => x.precision)) } };
}

const lastLine = (s: string) => s.trim().split('\n').at(-1) ?? '{}';
const round2 = (x: number) => Math.round(x * 100) / 100;
const round3 = (x: number) => Math.round(x * 1000) / 1000;

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const f of await run())
    console.log(`${f.name}: ${f.value} ${f.unit} (baseline ${f.baseline}, ratio ${f.ratio.toFixed(2)}) ${f.note ?? ''}`);
}
