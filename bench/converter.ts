// websitepro converter benchmark: pages per second per core for metadata + markdown of a set of
// local pages (served on 127.0.0.1), through the whole pipeline (JetStream task → converter actor →
// guarded fetch → worker thread → object store → outcome), against the same libraries called
// directly in one process on the same bytes (convert(): jsdom, Readability, turndown). The ratio is
// the pipeline's overhead; peak RSS of this process is reported beside the direct run's peak.
import os from 'node:os';
import { convert } from '../actors/converter/convert.ts';
import { startConverter } from '../test/converter/harness.ts';
import { fixtureServer, html } from '../test/outbound/fixture-server.ts';
import { benchPages } from '../test/converter/pages.ts';
import { figure, quick, type BenchFigure } from './figure.ts';

const mb = () => Math.round((process.memoryUsage().rss / 1048576) * 10) / 10;

export async function run(): Promise<BenchFigure[]> {
  const rounds = quick() ? 2 : 5;
  const perRound = quick() ? 8 : 24;
  const pages = benchPages();
  const teardowns: (() => unknown)[] = [];
  const t = { teardown: (fn: () => unknown) => void teardowns.push(fn) };
  try {
    const site = await fixtureServer(t, Object.fromEntries(pages.map((p, i) => [`/p${i}`, html(p)])));
    const urls = pages.map((_, i) => site.url(`/p${i}`));

    // baseline: the libraries in this process, one page after another (one core)
    const direct: number[] = [];
    let directPeak = mb();
    const bodies = pages.map((p) => Buffer.from(p));
    for (let i = 0; i < 2; i++) await convert({ body: bodies[i % bodies.length]!, contentType: 'text/html', status: 200, url: urls[0]!, finalUrl: urls[0]!, redirects: [], rendered: false, outputs: ['metadata', 'markdown'] });
    for (let r = 0; r < rounds; r++) {
      const c0 = process.cpuUsage();
      for (let i = 0; i < perRound; i++) {
        const u = urls[i % urls.length]!;
        await convert({ body: bodies[i % bodies.length]!, contentType: 'text/html; charset=utf-8', status: 200, url: u, finalUrl: u, redirects: [], rendered: false, outputs: ['metadata', 'markdown'] });
        directPeak = Math.max(directPeak, mb());
      }
      direct.push(round2(perRound / cpuSeconds(c0)));
    }

    // the pipeline: a real nats-server and the converter actor
    const c = await startConverter(t, { websitepro: { concurrency: 4 } });
    const cores = Math.max(1, Math.min(c.config.websitepro.concurrency, os.availableParallelism()));
    await Promise.all(urls.map((u) => c.runJob(u, ['metadata', 'markdown']))); // warm the threads
    const piped: number[] = [];
    let pipePeak = mb();
    const sampler = setInterval(() => { pipePeak = Math.max(pipePeak, mb()); }, 50);
    let failed = 0;
    const wall: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      const outs = await Promise.all(Array.from({ length: perRound }, (_, i) => c.runJob(urls[i % urls.length]!, ['metadata', 'markdown'], 300000)));
      failed += outs.filter((o) => o.metadata?.kind !== 'done' || o.markdown?.kind !== 'done').length;
      piped.push(round2(perRound / cpuSeconds(c0)));
      wall.push(round2(perRound / ((performance.now() - t0) / 1000)));
    }
    clearInterval(sampler);
    const note = `${perRound} pages per round, metadata+markdown; per core = pages per CPU-second of this process (all its threads: actor, ${cores} conversion thread(s), fixture server; the nats-server process is not counted), so a loaded machine does not skew it; wall-clock pipeline pages/s: ${wall.join(', ')}; baseline: convert() called directly in one process${failed ? `; ${failed} jobs failed` : ''}`;
    return [
      figure({ name: 'websitepro pages/s per core (metadata+markdown)', unit: 'pages/s/core', samples: piped, baselineSamples: direct, note }),
      figure({ name: 'websitepro converter peak RSS (this process, incl. threads)', unit: 'MB', samples: [pipePeak], baselineSamples: [directPeak], note: 'baseline: peak RSS while converting directly in one process; the nats-server is another process and not counted' }),
    ];
  } finally {
    for (const fn of teardowns.reverse()) await fn();
  }
}

const round2 = (x: number) => Math.round(x * 100) / 100;
const cpuSeconds = (since: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1e6;
};

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const f of await run()) console.log(`${f.name}: ${f.value} ${f.unit} (baseline ${f.baseline}, ratio ${f.ratio.toFixed(2)}) ${f.note ?? ''}`);
}
