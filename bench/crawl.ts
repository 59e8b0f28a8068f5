// Crawls (issue 42 "Measure"): a generated site on 127.0.0.1 (bench/lib/site.ts, in a process of its
// own: the bench's clock and the plain loop's CPU do not include its answers) crawled through the
// embedded default (gateway and every actor in one process, bench/lib/cluster.ts one-process layout),
// four figures each against a baseline measured in the same run:
// 1. pages/s of a crawl of SMALL pages (markdown) through the service against a plain loop in this
//    process that fetches the same URLs (guardedFetch) and converts them with the converter's own pool
//    (actors/converter/pool.ts, as many threads as the converter's, outputs markdown + links, links
//    followed breadth-first) with as many pages in flight as the crawl has (min(crawl.concurrency,
//    limits.walletTasks, websitepro.concurrency));
// 1b. CPU per page of the same two runs (the service's process and nats-server; the plain loop's
//    process): what figure 1 is made of when the machine's cores are the limit; the bench's log also
//    says how many messages a page wrote to each stream (`writes per page`, in the JSON too);
// 2. peak RSS of the one process (converter and supervisor, with the gateway and the wallet beside
//    them) during a BIG-page crawl against a 100-page crawl;
// 3. p99 of GET /v1/jobs/{id} of the BIG crawl while it runs (one request after another) against the
//    same job once it has finished and the system is idle.
// Every result of the BIG crawl is read through GET /v1/jobs/{id}/results?after= and counted: a
// wrong count, a page twice or a failed page throws (the bench fails).
//   npm run bench -- crawl      (BENCH_QUICK=1: BIG = 1,000 pages instead of 10,000)
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createKey } from '../shared/keys.ts';
import { wallet } from '../shared/protocol/wallet.ts';
import { jetstreamManager } from '@nats-io/jetstream';
import { guardedFetch } from '../shared/outbound/index.ts';
import { ConvertPool } from '../actors/converter/pool.ts';
import { figure, percentile, quick, type BenchRow } from './figure.ts';
import type { Cluster } from './lib/cluster.ts';
import { startSiteProcess, type Site } from './lib/site.ts';

/** Settings of the cluster this benchmark starts (merged over BENCH_OVERRIDES): none beyond them. */
export const CRAWL_CONFIG: Record<string, Record<string, unknown>> = {};

const OUTPUTS = ['markdown'];
const SMALL = 100;
// CRAWL_BENCH_PAGES / CRAWL_BENCH_RATE_PAGES: other sizes (the test's smallest run)
const ratePages = () => Number(process.env.CRAWL_BENCH_RATE_PAGES ?? 1000);
const bigPages = () => Number(process.env.CRAWL_BENCH_PAGES ?? (quick() ? 1000 : 10_000));

/** CPU time a process has used so far (user + system, every thread), in ms; 0 once it is gone. */
function cpuMsOf(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}
/** Wait (up to 30 s) until the processes used under 5 % of a core in all over 500 ms; answers the ms waited. */
async function quiet(pids: number[]): Promise<number> {
  const t0 = performance.now();
  const cpu = () => pids.reduce((sum, pid) => sum + cpuMsOf(pid), 0);
  while (performance.now() - t0 < 30_000) {
    const before = cpu();
    await new Promise((r) => setTimeout(r, 500));
    if (cpu() - before < 25) break;
  }
  return Math.round(performance.now() - t0);
}

/** A process's read-like and write-like system calls so far (/proc/<pid>/io syscr, syscw: sockets and files). */
function syscallsOf(pid: number): [number, number] {
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    const n = (k: string) => Number(new RegExp(`^${k}: (\\d+)`, 'm').exec(io)?.[1] ?? 0);
    return [n('syscr'), n('syscw')];
  } catch {
    return [0, 0];
  }
}

/** USER_HZ: 100 on Linux (sysconf(_SC_CLK_TCK)). */
const CLOCK_TICKS = 100;

interface JobView {
  id: string;
  status: string;
  pages?: { recorded?: number };
  results?: unknown[];
  resultsNext?: string;
}

export async function runCrawlBench(cluster: Cluster): Promise<{ rows: BenchRow[]; raw: unknown }> {
  const big = bigPages();
  const RATE_PAGES = ratePages();
  const site = await startSiteProcess(Math.max(big, RATE_PAGES, SMALL));
  const log = (s: string) => process.stderr.write(`bench: crawl: ${s}\n`);
  try {
    const k = await createKey(cluster.nc, 'admin');
    await wallet.grant(cluster.nc, k.walletId, 1_000_000_000_000, 'bench');
    const headers = { authorization: `Bearer ${k.key}`, 'content-type': 'application/json' };
    let serverMs: number[] = [];
    const getJob = async (id: string, parse = true) => {
      // the answer's time is the service's: until its last byte is here. This bench's own parsing of
      // it (a thousand results inline, ~400 KB) comes after the clock stops, and only when asked: its
      // garbage would make this process's collector pause inside a later read's clock. The status
      // alone is read from the answer's first bytes (the job's third field).
      const t0 = performance.now();
      const res = await fetch(`${cluster.gatewayUrl}/v1/jobs/${id}`, { headers });
      const body = Buffer.from(await res.arrayBuffer());
      const ms = performance.now() - t0;
      if (res.status !== 200) throw new Error(`GET /v1/jobs/${id}: ${res.status} ${body.toString('utf8').slice(0, 500)}`);
      // the gateway's own time (Server-Timing): the read without the network's and this process's
      serverMs.push(Number(/app;dur=([\d.]+)/.exec(res.headers.get('server-timing') ?? '')?.[1] ?? Number.NaN));
      const status = /"status":"(\w+)"/.exec(body.subarray(0, 512).toString('utf8'))?.[1];
      if (!status) throw new Error(`GET /v1/jobs/${id}: no status in ${body.subarray(0, 512).toString('utf8')}`);
      const job = parse ? (JSON.parse(body.toString('utf8')) as { job: JobView }).job : null;
      return { ms, status, job };
    };
    /** Creates a crawl of `limit` pages and waits for its end, reading the job every `everyMs` (0: back to back). */
    const crawl = async (limit: number, everyMs: number) => {
      const t0 = performance.now();
      const res = await fetch(`${cluster.gatewayUrl}/v1/websitepro/jobs`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ url: site.url, outputs: OUTPUTS, crawl: { limit, sitemap: 'skip' } }),
      });
      const json = (await res.json()) as { job: JobView };
      if (res.status !== 201) throw new Error(`crawl of ${limit}: ${res.status} ${JSON.stringify(json)}`);
      const reads: number[] = [];
      let job = json.job;
      let status = job.status;
      let lastLog = performance.now();
      while (status !== 'completed' && status !== 'failed') {
        if (everyMs) await new Promise((r) => setTimeout(r, everyMs));
        const log10 = performance.now() - lastLog > 10_000;
        const g = await getJob(job.id, log10);
        reads.push(g.ms);
        status = g.status;
        if (log10) {
          job = g.job!;
          lastLog = performance.now();
          log(`${job.pages?.recorded ?? 0}/${limit} pages after ${Math.round((lastLog - t0) / 1000)} s`);
        }
      }
      const seconds = (performance.now() - t0) / 1000;
      job = (await getJob(job.id)).job!;
      if (job.status !== 'completed') throw new Error(`crawl of ${limit} ended ${job.status}: ${JSON.stringify(job).slice(0, 500)}`);
      return { id: job.id, seconds, reads };
    };
    /** Every result through the paging; throws unless there are `limit`, distinct, all done. */
    const readAll = async (id: string, limit: number) => {
      const keys = new Set<string>();
      let after: string | null = '';
      let answers = 0;
      while (after !== null) {
        const q: string = after ? `?after=${encodeURIComponent(after)}` : '';
        const res = await fetch(`${cluster.gatewayUrl}/v1/jobs/${id}/results${q}`, { headers });
        const json = (await res.json()) as { results: { key: string; status: string }[]; next: string | null };
        if (res.status !== 200) throw new Error(`GET results: ${res.status} ${JSON.stringify(json)}`);
        answers++;
        for (const r of json.results) {
          if (r.status !== 'done') throw new Error(`result ${r.key} is ${r.status}: ${JSON.stringify(r)}`);
          if (keys.has(r.key)) throw new Error(`result ${r.key} listed twice`);
          keys.add(r.key);
        }
        after = json.next;
      }
      const expected = limit * OUTPUTS.length;
      if (keys.size !== expected) throw new Error(`crawl ${id}: ${keys.size} results read through the paging, expected ${expected}`);
      return { results: keys.size, answers };
    };

    // the 100-page crawl: warms the converter's threads, then its RSS
    log(`${SMALL} pages`);
    let sampler = cluster.sampleRss(200);
    const small = await crawl(SMALL, 100);
    const smallRss = sampler.stop()['one-process'] ?? [];
    await readAll(small.id, SMALL);

    // pages/s: the service, then the plain loop on the same URLs with as many pages in flight
    log(`${RATE_PAGES} pages, the service`);
    await site.reset();
    const servicePids = [cluster.procs.get('one-process')?.pid, cluster.nats.pid].filter((p): p is number => !!p);
    const cpu0 = servicePids.map(cpuMsOf);
    const writes0 = await streamWrites(cluster);
    const io0 = servicePids.map(syscallsOf);
    const rate = await crawl(RATE_PAGES, 100);
    const writes = perPage(writes0, await streamWrites(cluster), RATE_PAGES);
    log(
      `writes per page: ${Object.entries(writes)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
    );
    const io = servicePids.map((pid, i) => {
      const [r, w] = syscallsOf(pid);
      const [r0, w0] = io0[i]!;
      return `${pid === cluster.nats.pid ? 'nats-server' : 'service'} ${((r - r0) / RATE_PAGES).toFixed(1)} reads, ${((w - w0) / RATE_PAGES).toFixed(1)} writes`;
    });
    log(`system calls per page (read-like, write-like): ${io.join('; ')}`);
    const serviceCpuMs = servicePids.reduce((sum, pid, i) => sum + cpuMsOf(pid) - cpu0[i]!, 0);
    const serviceHits = await site.hits();
    const c = cluster.config;
    const inFlight = Math.min(c.crawl.concurrency, c.limits.walletTasks, c.websitepro.concurrency);
    log(`${RATE_PAGES} pages, the plain loop (${inFlight} in flight)`);
    await site.reset();
    const own0 = process.cpuUsage();
    const plain = await plainLoop(site, cluster, RATE_PAGES, inFlight);
    const own = process.cpuUsage(own0);
    const plainCpuMs = (own.user + own.system) / 1000;

    // the big crawl: RSS, job reads while it runs, then the same reads idle, then every result
    log(`${big} pages`);
    sampler = cluster.sampleRss(500);
    const readEveryMs = Number(process.env.CRAWL_BENCH_READ_EVERY_MS ?? 0);
    serverMs = [];
    const busy = await crawl(big, readEveryMs);
    const busyServer = serverMs;
    const bigRss = sampler.stop()['one-process'] ?? [];
    // idle: the end of a crawl still has work behind it (its frontier and visited set purged, the
    // projection's last writes): the baseline's reads wait until the service and nats-server are quiet
    const settledMs = await quiet(servicePids);
    log(`idle after ${settledMs} ms`);
    const idleReads: number[] = [];
    serverMs = [];
    for (let i = 0; i < Math.max(300, Math.min(busy.reads.length, 2000)); i++) {
      if (readEveryMs) await new Promise((r) => setTimeout(r, readEveryMs));
      idleReads.push((await getJob(busy.id, false)).ms);
    }
    const idleServer = serverMs;
    log(
      `server side (Server-Timing) p99 during the crawl ${percentile(busyServer, 99).toFixed(2)} ms, idle ${percentile(idleServer, 99).toFixed(2)} ms (p50 ${percentile(busyServer, 50).toFixed(2)}, ${percentile(idleServer, 50).toFixed(2)})`,
    );
    const read = await readAll(busy.id, big);
    log(`${read.results} results read in ${read.answers} answers`);

    const servicePps = RATE_PAGES / rate.seconds;
    const p99 = (xs: number[]) => percentile(xs, 99);
    const rows: BenchRow[] = [
      figure({
        name: `crawl: pages/s through the service (${RATE_PAGES} pages, ${OUTPUTS.join('+')}) vs a plain loop`,
        unit: 'pages/s',
        samples: [servicePps],
        baselineSamples: [plain.pps],
        note: `service: POST to completed, one-process layout, ${inFlight} pages in flight (min of crawl.concurrency ${c.crawl.concurrency}, limits.walletTasks ${c.limits.walletTasks}, websitepro.concurrency ${c.websitepro.concurrency}); ${serviceHits} page requests. Plain loop: guardedFetch + the converter's ConvertPool (${plain.threads} threads, markdown + links), breadth-first with ${inFlight} in flight, ${plain.pages} pages`,
      }),
      figure({
        name: `crawl: CPU per page, the service (its process and nats-server) vs the plain loop (${RATE_PAGES} pages)`,
        unit: 'ms',
        samples: [serviceCpuMs / RATE_PAGES],
        baselineSamples: [plainCpuMs / RATE_PAGES],
        note: `CPU time (user + system, every thread) from /proc during the crawl above, over its pages; the plain loop's is this process's own (its fetches and its converter threads; the site runs in a process of its own for both), the service's includes the gateway answering this bench's job reads every 100 ms. Not a goal of its own: it says what the pages/s ratio is made of on a machine whose cores are the limit`,
      }),
      figure({
        name: `crawl: peak RSS of the one process (converter + supervisor + gateway + wallet), ${big}-page vs ${SMALL}-page crawl`,
        unit: 'MB',
        samples: [Math.max(...bigRss)],
        baselineSamples: [Math.max(...smallRss)],
        note: `RSS of the one-process layout's process (VmRSS, threads included) sampled every 200/500 ms during each crawl; the ${SMALL}-page crawl ran first on a fresh process`,
      }),
      figure({
        name: `crawl: p99 GET /v1/jobs/{id} during a ${big}-page crawl vs idle`,
        unit: 'ms',
        samples: [p99(busy.reads)],
        baselineSamples: [p99(idleReads)],
        note: `one request after another, each timed from its send to its answer's last byte (the bench's parsing of it after): ${busy.reads.length} during the crawl (${Math.round(busy.seconds)} s, ${(big / busy.seconds).toFixed(1)} pages/s), ${idleReads.length} of the same finished job once the service and nats-server were quiet (under 5 % of a core for 500 ms, ${settledMs} ms after the end); every result (${read.results}) then read through /results?after= in ${read.answers} answers and counted`,
      }),
    ];
    return {
      rows,
      raw: {
        small: { seconds: small.seconds, rss: smallRss },
        rate: { seconds: rate.seconds, hits: serviceHits, plain, writesPerPage: writes },
        big: { pages: big, seconds: busy.seconds, reads: busy.reads.length, rss: bigRss, p50: percentile(busy.reads, 50) },
        idle: { p50: percentile(idleReads, 50) },
        server: {
          busy: { p50: percentile(busyServer, 50), p99: percentile(busyServer, 99) },
          idle: { p50: percentile(idleServer, 50), p99: percentile(idleServer, 99) },
        },
        read,
      },
    };
  } finally {
    await site.close();
  }
}

/** Each stream's last sequence (every message written to it, kept or not). */
async function streamWrites(cluster: Cluster): Promise<Map<string, number>> {
  const jsm = await jetstreamManager(cluster.nc);
  const m = new Map<string, number>();
  for await (const si of jsm.streams.list()) m.set(si.config.name, si.state.last_seq);
  return m;
}

/** Messages written per page to each stream between two `streamWrites` (streams written to only). */
function perPage(before: Map<string, number>, after: Map<string, number>, pages: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, seq] of after) {
    const n = seq - (before.get(name) ?? 0);
    if (n > 0) out[name] = Math.round((n / pages) * 100) / 100;
  }
  return out;
}

/** Fetch and convert `limit` pages of the site breadth-first, `inFlight` at a time, in this process. */
async function plainLoop(site: Site, cluster: Cluster, limit: number, inFlight: number) {
  const c = cluster.config;
  const threads = Math.max(1, Math.min(c.websitepro.concurrency, cpus().length));
  const pool = new ConvertPool({ size: threads, taskTimeoutMs: c.websitepro.convertTimeoutMs });
  const one = async (url: string): Promise<string[]> => {
    const res = await guardedFetch(url, {
      allowCidrs: c.outbound.allowCidrs,
      maxRedirects: c.outbound.maxRedirects,
      connectTimeoutMs: c.outbound.connectTimeoutMs,
      timeoutMs: c.websitepro.fetchTimeoutMs,
      maxBytes: c.websitepro.maxBytes,
    });
    const r = await pool.run({
      body: res.body,
      contentType: String(res.headers['content-type'] ?? ''),
      status: res.status,
      url,
      finalUrl: res.url,
      redirects: [],
      rendered: false,
      outputs: ['markdown', 'links'],
      warnings: [],
      detectJs: true,
    });
    if ('needsJavaScript' in r && r.needsJavaScript) throw new Error(`plain loop: ${url} asks for JavaScript`);
    const { outputs } = r as Extract<typeof r, { outputs: unknown }>;
    const links = outputs.links as { ok: true; data: string } | { ok: false } | undefined;
    if (!links?.ok || !outputs.markdown?.ok) throw new Error(`plain loop: ${url} did not convert`);
    return (JSON.parse(links.data) as { url: string }[]).map((l) => l.url.split('#')[0]!);
  };
  try {
    await one(site.url); // the threads' start, as the service's 100-page crawl warmed its own
    const seen = new Set<string>([site.url]);
    const queue = [site.url];
    let done = 0;
    const t0 = performance.now();
    const worker = async () => {
      for (;;) {
        const url = queue.shift();
        if (!url) {
          if (done + inFlightNow >= Math.min(limit, seen.size)) return;
          await new Promise((r) => setTimeout(r, 1));
          continue;
        }
        inFlightNow++;
        const links = await one(url);
        inFlightNow--;
        done++;
        for (const l of links)
          if (seen.size < limit && !seen.has(l) && l.startsWith(site.url)) {
            seen.add(l);
            queue.push(l);
          }
      }
    };
    let inFlightNow = 0;
    await Promise.all(Array.from({ length: inFlight }, worker));
    const seconds = (performance.now() - t0) / 1000;
    if (done !== limit) throw new Error(`plain loop: ${done} pages, expected ${limit}`);
    return { pages: done, seconds, pps: done / seconds, threads };
  } finally {
    await pool.close();
  }
}
