// `npm run bench`: every benchmark, bounded and local, then one table (stdout and
// docs/performance.md) and the JSON behind it (bench/results/latest.json).
//   node --import tsx bench/run.ts [gateway] [pipeline] [memory] [durability] [fairness] [services] [history] [crawl]
// (default: every part but history, which fills a store of 1 M jobs and runs 10 minutes of traffic,
// and crawl, a 10,000-page crawl: named only; see bench/history.ts and bench/crawl.ts for their env)
// Env: BENCH_QUICK=1 short runs; BENCH_OUT=<file> JSON elsewhere; BENCH_DOCS=1|0 force or forbid
// rewriting docs/performance.md (default: only a full, non-quick run of every part rewrites it).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem, release, loadavg, platform, arch } from 'node:os';
import { dirname, join } from 'node:path';
import { ROOT } from '../shared/config/index.ts';
import { loadNativeUws } from '../gateway/uws.ts';
import { isSkipped, quick, spread, type BenchFigure, type BenchRow } from './figure.ts';
import { startCluster } from './lib/cluster.ts';
import { stopAll } from './lib/procs.ts';
import { runGatewayBench } from './gateway.ts';
import { measureIdle, memoryFigures } from './memory.ts';

const DEFAULT_PARTS = ['gateway', 'pipeline', 'memory', 'durability', 'fairness', 'services'] as const;
const ALL_PARTS = [...DEFAULT_PARTS, 'history', 'crawl'] as const;
type Part = (typeof ALL_PARTS)[number];
const SERVICE_BENCHES = ['converter', 'shots', 'labs'] as const;

function cmd(file: string, args: string[]): string {
  try {
    return execFileSync(file, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000 }).trim();
  } catch {
    return 'unknown';
  }
}

export function machine() {
  const c = cpus();
  return {
    cpu: c[0]?.model ?? 'unknown',
    cores: c.length,
    memoryGb: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: `${platform()} ${release()} ${arch()}`,
    loadavgAtStart: loadavg().map((x) => Math.round(x * 100) / 100),
  };
}

export function versions() {
  let uws = 'unknown';
  try {
    uws = loadNativeUws().from.replace(ROOT + '/', '');
  } catch (e) {
    uws = (e as Error).message.split('\n')[0]!;
  }
  return {
    node: process.version,
    natsServer: cmd(process.env.NATS_SERVER_BIN ?? 'nats-server', ['--version']),
    uws,
    autocannon: cmd(process.execPath, ['-p', `require(${JSON.stringify(join(ROOT, 'node_modules/autocannon/package.json'))}).version`]),
    commit: cmd('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD']),
    dirty: cmd('git', ['-C', ROOT, 'status', '--porcelain']) !== '',
  };
}

const fmt = (x: number) => {
  if (!Number.isFinite(x)) return '-';
  const a = Math.abs(x);
  return a >= 1000 ? Math.round(x).toString() : a >= 100 ? x.toFixed(0) : a >= 10 ? x.toFixed(1) : x.toFixed(2);
};
const range = (xs: number[] | undefined) => (xs && xs.length > 1 ? ` (${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))})` : '');

/** One markdown table: figure, value, baseline, ratio; min–max of the runs beside each median. */
export function table(rows: BenchRow[]): string {
  const lines = ['| figure | value (min–max) | baseline (min–max) | ratio | unit |', '|---|---|---|---|---|'];
  for (const r of rows) {
    if (isSkipped(r)) lines.push(`| ${r.name} | skipped: ${r.skipped.replaceAll('|', '\\|')} | | | |`);
    else
      lines.push(
        `| ${r.name} | ${fmt(r.value)}${range(r.samples)} | ${fmt(r.baseline)}${range(r.baselineSamples)} | ${Number.isFinite(r.ratio) ? r.ratio.toFixed(2) : '-'} | ${r.unit} |`,
      );
  }
  return lines.join('\n');
}

async function serviceBench(name: string): Promise<BenchRow[]> {
  const file = join(ROOT, 'bench', `${name}.ts`);
  if (!existsSync(file)) return [{ name: `${name} benchmark`, skipped: `bench/${name}.ts does not exist in this tree yet` }];
  try {
    const mod = (await import(file)) as { run?: () => Promise<BenchFigure[]> };
    if (typeof mod.run !== 'function') return [{ name: `${name} benchmark`, skipped: `bench/${name}.ts exports no run()` }];
    return await mod.run();
  } catch (e) {
    return [{ name: `${name} benchmark`, skipped: `failed: ${(e as Error).message.split('\n')[0]}` }];
  }
}

/** The running cluster, so an interrupt also stops its nats-server. */
/** Clusters running now: stopped on a signal. */
const running = new Set<Awaited<ReturnType<typeof startCluster>>>();
const pipelineBench = () => import(join(ROOT, 'bench', 'pipeline.ts')) as Promise<typeof import('./pipeline.ts')>;

export async function main(argv: string[]) {
  const parts: Part[] = argv.length ? argv.filter((a): a is Part => (ALL_PARTS as readonly string[]).includes(a)) : [...DEFAULT_PARTS];
  if (argv.length && parts.length !== argv.length) throw new Error(`usage: bench/run.ts [${ALL_PARTS.join('] [')}]`);
  const startedAt = new Date().toISOString();
  const info = { machine: machine(), versions: versions() };
  const rows: BenchRow[] = [];
  const raw: Record<string, unknown> = {};
  const log = (s: string) => process.stderr.write(`bench: ${s}\n`);

  const needCluster = parts.some((p) => p === 'gateway' || p === 'pipeline' || p === 'memory');
  if (needCluster) {
    log('starting nats-server and actor processes');
    // the gateway alone needs only the wallet behind it; the pipeline and memory need every actor
    const cluster = await startCluster(parts.includes('pipeline') || parts.includes('memory') ? {} : { actors: ['wallet'] });
    running.add(cluster);
    try {
      const probe = parts.includes('memory') ? await measureIdle(cluster) : null;
      const sampler = cluster.sampleRss();
      if (parts.includes('gateway')) {
        log('gateway');
        const g = await runGatewayBench(cluster);
        rows.push(...g.rows);
        raw.gateway = g.raw;
      }
      if (parts.includes('pipeline')) {
        log('pipeline');
        const p = await (await pipelineBench()).runPipelineBench(cluster);
        rows.push(...p.rows);
        raw.pipeline = p.raw;
      }
      const underLoad = sampler.stop();
      if (parts.includes('pipeline') && process.env.BENCH_PIPELINE_ONE_PROCESS !== '0') {
        // the issue's goal is stated for the embedded default: every actor and the gateway in one
        // process. The same bench against that layout, on a cluster of its own (BENCH_PIPELINE_ONE_PROCESS=0: skip)
        log('pipeline, one process (the embedded default)');
        const one = await startCluster({ layout: 'one-process' });
        running.add(one);
        try {
          const p = await (await pipelineBench()).runPipelineBench(one);
          rows.push(...p.rows);
          raw.pipelineOneProcess = p.raw;
        } finally {
          running.delete(one);
          await one.stop();
        }
      }
      if (probe) {
        log('memory');
        // readings under load only mean something when some load ran
        rows.push(...(await memoryFigures(cluster, probe, parts.includes('gateway') || parts.includes('pipeline') ? underLoad : {})));
      }
    } finally {
      await cluster.stop();
      running.delete(cluster);
    }
  }
  if (parts.includes('durability')) {
    log('durability (sync_interval always vs 2m)');
    const { runDurabilityBench } = await import('./durability.ts');
    const d = await runDurabilityBench();
    rows.push(...d.rows);
    raw.durability = d.raw;
  }
  if (parts.includes('fairness')) {
    log("fairness (a wallet's metadata job, idle vs beside another wallet's 1,000 stalling tasks)");
    const { runFairnessBench, FAIRNESS_CONFIG } = await import('./fairness.ts');
    // a cluster of its own: the share's settings and stalls that outlast the run
    const cluster = await startCluster({ config: FAIRNESS_CONFIG });
    running.add(cluster);
    try {
      const f = await runFairnessBench(cluster);
      rows.push(...f.rows);
      raw.fairness = f.raw;
    } finally {
      running.delete(cluster);
      await cluster.stop();
    }
  }
  if (parts.includes('history')) {
    log(
      `history (${process.env.HISTORY_BENCH_BASELINE === 'customers' ? 'the same wallets without history' : 'empty store'} vs filled store, ${process.env.HISTORY_BENCH_MODE === 'cluster' ? 'npm run cluster (R3)' : 'the embedded default'})`,
    );
    const { runHistoryBench } = await import('./history.ts');
    const h = await runHistoryBench();
    rows.push(...h.rows);
    raw.history = h.raw;
  }
  if (parts.includes('crawl')) {
    log('crawl (a generated site through the embedded default: pages/s vs a plain loop, RSS, job reads)');
    const { runCrawlBench, CRAWL_CONFIG } = await import('./crawl.ts');
    const cluster = await startCluster({ layout: 'one-process', config: CRAWL_CONFIG });
    running.add(cluster);
    try {
      const c = await runCrawlBench(cluster);
      rows.push(...c.rows);
      raw.crawl = c.raw;
    } finally {
      running.delete(cluster);
      await cluster.stop();
    }
  }
  if (parts.includes('services')) {
    for (const s of SERVICE_BENCHES) {
      log(s);
      rows.push(...(await serviceBench(s)));
    }
  }
  await stopAll();

  const figures = rows
    .filter((r): r is BenchFigure => !isSkipped(r))
    .map((f) => ({ ...f, spread: spread(f.samples), ...(f.baselineSamples ? { baselineSpread: spread(f.baselineSamples) } : {}) }));
  const result = {
    startedAt,
    finishedAt: new Date().toISOString(),
    command: `${Object.entries(process.env)
      .filter(([k]) => k === 'BENCH_QUICK' || /^[A-Z]+_BENCH_/.test(k))
      .map(([k, v]) => `${k}=${v} `)
      .join('')}npm run bench${argv.length ? ' -- ' + argv.join(' ') : ''}`,
    quick: quick(),
    parts,
    ...info,
    figures,
    skipped: rows.filter(isSkipped),
    raw,
  };
  // a history run alone keeps its own file: it takes an hour, the other parts minutes
  const out =
    process.env.BENCH_OUT ??
    join(
      ROOT,
      'bench',
      'results',
      parts.length === 1 && parts[0] === 'history'
        ? process.env.HISTORY_BENCH_MODE === 'cluster'
          ? 'history-cluster.json'
          : 'history.json'
        : parts.length === 1 && parts[0] === 'crawl'
          ? 'crawl.json'
          : 'latest.json',
    );
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
  const md = table(rows);
  process.stdout.write(md + '\n');
  log(`JSON: ${out}`);
  const full = !quick() && DEFAULT_PARTS.every((p) => parts.includes(p));
  if (process.env.BENCH_DOCS === '1' || (process.env.BENCH_DOCS !== '0' && full)) {
    const { writePerformanceDoc } = await import('./lib/doc.ts');
    writePerformanceDoc(join(ROOT, 'docs', 'performance.md'), result, md);
    log('table written to docs/performance.md');
  }
  return result;
}

if (process.argv[1] && import.meta.url === `file://${process.argv[1]}`) {
  // one shutdown for every way out: children and the cluster's nats-server are always stopped first
  let exiting: Promise<void> | null = null;
  const shutdown = (code: number) => {
    exiting ??= Promise.allSettled([stopAll(), ...[...running].map((c) => c.stop())]).then(() => process.exit(code));
    return exiting;
  };
  process.on('SIGINT', () => void shutdown(130));
  process.on('SIGTERM', () => void shutdown(143));
  // exit when done: a service benchmark's stray handle (an unref'd timer, a pool) must not hold the command open
  main(process.argv.slice(2)).then(
    () => shutdown(0),
    (e) => {
      console.error(e);
      return shutdown(1);
    },
  );
}
