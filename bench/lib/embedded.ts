// The embedded default as an operator starts it: `node --import tsx main.ts` on a data folder
// (every unit in one process, its own nats-server on <dataDir>/nats), with random ports and the
// bench's config overrides (bench/lib/cluster.ts BENCH_OVERRIDES). Used by bench/history.ts.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { spawnTs, stderrOf, type Proc } from './procs.ts';
import { BENCH_OVERRIDES } from './cluster.ts';

export interface Embedded {
  dataDir: string;
  proc: Proc;
  /** http://127.0.0.1:<port> */
  url: string;
  natsUrl: string;
  /** ms from spawn to the first `/readyz` 200. */
  readyMs: number;
  /** ms from spawn to each `<unit> started` log line (info level only). */
  unitStartedMs: Record<string, number>;
  /** Resolves with ms from spawn once a log line matches (info level only). */
  logLine(re: RegExp): Promise<{ ms: number; line: string }>;
  stop(): Promise<void>;
}

/** Writes the bench config into `dataDir` and returns its path. */
export function benchConfigFile(dataDir: string): string {
  const f = join(dataDir, 'bench-config.json');
  writeFileSync(f, JSON.stringify(BENCH_OVERRIDES, null, 2));
  return f;
}

export async function startEmbedded(dataDir: string, o: { logLevel?: string; timeoutMs?: number; name?: string } = {}): Promise<Embedded> {
  const t0 = performance.now();
  const p = spawnTs(o.name ?? 'embedded', 'main.ts', [], {
    DATA_DIR: dataDir,
    CONFIG_FILE: benchConfigFile(dataDir),
    NATS_URL: '',
    NATS_PORT: '0',
    PORT: '0',
    LOG_LEVEL: o.logLevel ?? 'warn',
    MODE: 'development',
  });
  const unitStartedMs: Record<string, number> = {};
  let url = '';
  const logLine = followLines(p, t0, (line, ms) => {
    const api = /API:\s+(http\S+)\/v1/.exec(line);
    if (api) url = api[1]!.replace('localhost', '127.0.0.1');
    const unit = /"msg":"(?:embedded )?([\w-]+) started"/.exec(line);
    if (unit && !(unit[1]! in unitStartedMs)) unitStartedMs[unit[1]!] = ms;
  });
  // main.ts stops its units, then its nats-server (which writes its indexes); SIGKILL only past 20 s
  const stop = stopGracefully(p, 20_000);
  const deadline = Date.now() + (o.timeoutMs ?? 600_000);
  let readyMs = NaN;
  try {
    while (Date.now() < deadline) {
      if (p.child.exitCode !== null) throw new Error(`main.ts exited (${p.child.exitCode}) before it was ready:\n${stderrOf(p)}`);
      if (url) {
        const ok = await fetch(`${url}/readyz`).then(
          (r) => r.status === 200,
          () => false,
        );
        if (ok) {
          readyMs = performance.now() - t0;
          break;
        }
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    if (!Number.isFinite(readyMs))
      throw new Error(`main.ts on ${dataDir}: /readyz not 200 within ${o.timeoutMs ?? 600_000} ms\n${stderrOf(p)}`);
  } catch (e) {
    await stop();
    throw e;
  }
  const natsUrl = readFileSync(join(dataDir, 'nats.url'), 'utf8').trim();
  return {
    dataDir,
    proc: p,
    url,
    natsUrl,
    readyMs,
    unitStartedMs,
    stop,
    logLine,
  };
}

/**
 * Reads a started command's stdout line by line, each to `onLine` with ms since `t0`; returns
 * `logLine(re)`, which resolves once a line matches (projection and catch-up lines are kept, so a
 * late question is answered too).
 */
export function followLines(
  p: Proc,
  t0: number,
  onLine: (line: string, ms: number) => void,
): (re: RegExp) => Promise<{ ms: number; line: string }> {
  const watchers: { re: RegExp; resolve: (v: { ms: number; line: string }) => void }[] = [];
  const seen: { ms: number; line: string }[] = [];
  let buf = '';
  p.child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const ms = performance.now() - t0;
      onLine(line, ms);
      if (/projection|caught up/.test(line)) seen.push({ ms, line });
      for (const w of [...watchers])
        if (w.re.test(line)) {
          watchers.splice(watchers.indexOf(w), 1);
          w.resolve({ ms, line });
        }
    }
  });
  return (re) => {
    const had = seen.find((s) => re.test(s.line));
    return had ? Promise.resolve(had) : new Promise((resolve) => watchers.push({ re, resolve }));
  };
}

/** SIGTERM, then SIGKILL (the process tree) past `graceMs`; resolves once it has exited. */
export function stopGracefully(p: Proc, graceMs: number): () => Promise<void> {
  return async () => {
    if (p.child.exitCode !== null || p.child.signalCode !== null) return;
    const exited = new Promise<void>((r) => p.child.once('exit', () => r()));
    p.child.kill('SIGTERM');
    const t = setTimeout(() => void p.stop(), graceMs);
    await exited;
    clearTimeout(t);
    await p.stop();
  };
}

/** Every process on the machine: parent pid, name, RSS in MB (from /proc). */
/** Every process on the machine: parent, name, RSS (MB) and CPU time used so far (user + system, seconds). */
export function processes(): Map<number, ProcStat> {
  const out = new Map<number, ProcStat>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const fields = stat.slice(close + 2).split(' ');
      const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${d}/status`, 'utf8'));
      // utime and stime (fields 14 and 15 of /proc/<pid>/stat), in clock ticks of 1/100 s
      out.set(Number(d), {
        ppid: Number(fields[1]),
        comm,
        rssMb: rss ? Number(rss[1]) / 1024 : 0,
        cpuS: (Number(fields[11]) + Number(fields[12])) / 100,
      });
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

/**
 * RSS (MB) of a process and all its descendants, grouped: `node` (the root), `nats-server`, and
 * `browsers` (every other descendant: Chromium, Firefox and their helpers; shared pages counted
 * once per process, as RSS does).
 */
export function treeRss(root: number): Record<string, number> {
  return treeSum(root, (p) => p.rssMb);
}

/** CPU seconds used so far by the same groups as treeRss (a process that ended is no longer counted). */
export function treeCpu(root: number): Record<string, number> {
  return treeSum(root, (p) => p.cpuS);
}

export interface ProcStat {
  ppid: number;
  comm: string;
  rssMb: number;
  cpuS: number;
}

function treeSum(root: number, pick: (p: ProcStat) => number): Record<string, number> {
  const all = processes();
  const kids = new Map<number, number[]>();
  for (const [pid, p] of all) kids.set(p.ppid, [...(kids.get(p.ppid) ?? []), pid]);
  const groups: Record<string, number> = { node: 0, 'nats-server': 0, browsers: 0 };
  const walk = (pid: number, depth: number) => {
    const p = all.get(pid);
    if (!p) return;
    const g = depth === 0 ? 'node' : p.comm === 'nats-server' ? 'nats-server' : 'browsers';
    groups[g]! += pick(p);
    for (const k of kids.get(pid) ?? []) walk(k, depth + 1);
  };
  walk(root, 0);
  for (const g of Object.keys(groups)) groups[g] = Math.round(groups[g]! * 10) / 10;
  return groups;
}
