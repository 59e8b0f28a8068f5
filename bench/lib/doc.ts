// docs/performance.md: the latest full table, what each figure means, the command, the machine.
// The full method of each bench and every past run: docs/notes/performance-history.md.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

interface RunInfo {
  startedAt: string;
  finishedAt: string;
  command: string;
  machine: { cpu: string; cores: number; memoryGb: number; os: string; loadavgAtStart: number[] };
  versions: Record<string, unknown>;
}

export const EXPLANATION = `## What the figures mean

Every figure is the median of repeated runs, with the smallest and largest run beside it, and a
baseline measured in the same run on the same machine; **ratio = value / baseline**. For req/s a
ratio below 1 means fewer requests than the baseline; for latency and memory a ratio above 1 means
slower or heavier. Absolute numbers depend on the machine and its load; compare ratios between runs.
The full method of each bench, and what each change bought: [notes/performance-history.md](notes/performance-history.md).

| rows | bench | value | baseline | run it alone |
|---|---|---|---|---|
| \`GET …\`, \`POST /v1/websitepro/quote\` req/s and p99 | \`bench/gateway.ts\` | the gateway (its own process, wallet beside it), autocannon in another process, 1 request in flight per connection; req/s counts 2xx only, p99 of the 2xx answers | **bare uWS**: the same native build replaying the gateway's captured bytes (the HTTP stack's limit); **node:http**: the same route handlers, schemas, auth, limiter and NATS reads on \`node:http\` | \`npm run bench -- gateway\` (\`BENCH_GATEWAY_ENDPOINTS=balance,quote\` for some rows) |
| HTTP layer alone | \`bench/gateway.ts\` | bare uWS on the same precomputed bytes | node:http on them: the ceiling of every "vs node:http" ratio | as above |
| ledger last sequence as of now | \`bench/gateway.ts\` | the one NATS round trip of a balance read: a direct get of the last entry | a stream-info request (what a replicated ledger needs) | as above |
| websitepro metadata job → completed, jobs/s, writes, requests, stage timeline | \`bench/pipeline.ts\` | a job through the whole system (gateway → charge → task → converter → result → supervisor → the gateway's watch), one process per actor; rows marked *one process (npm start)* run the embedded default | the converter's fetch-and-convert called directly (the ratio is the pipeline's overhead); writes and requests are counted on the wire and have no baseline | \`npm run bench -- pipeline\` |
| RSS … idle / under load | \`bench/memory.ts\` | VmRSS of each actor process, idle and peak while the gateway and pipeline loads run | an empty Node process holding one NATS connection | \`npm run bench -- gateway pipeline memory\` |
| durability: … | \`bench/durability.ts\` | ledger writes and job creation against nats-server with \`sync_interval: always\` (the project's setting: fsync before every acknowledgement) | the same against the server's default (\`2m\`, unsafe for money) | \`npm run bench -- durability\` |
| websitepro pages/s, peak RSS, corpus | \`bench/converter.ts\` | pages per CPU-second through the converter actor; the corpus' pass rate, text recall and precision | the libraries it is built on called directly (jsdom, Readability, turndown); Readability's own text | \`npm run bench -- services\` |
| shots … | \`bench/shots.ts\` | shots per minute, memory per page, steps of a shot, RSS after many shots, through the browser-pool actor | a plain puppeteer-core loop taking the same shots (same settle rule), and one capturing at the load event | \`BENCH_QUICK=1 SHOTS_BENCH_BROWSERS=chromium node bench/shots.ts\` |
| labs … | \`bench/labs.ts\` | wall time and round trips of the quick and conformance modules against a local relay | the least round trips their checks need (and that many REQ→EOSE round trips in time) | \`npm run bench -- services\` |

### Gateway

The bench raises the rate limits so they never refuse (a token is still taken per request),
allows 127.0.0.1 as a target and logs at \`warn\`, in the gateway and the node:http baseline alike.
\`BENCH_GATEWAY_PROF=<dir>\` writes a V8 CPU profile of the gateway; \`BENCH_GATEWAY_SECONDS=<s>\` sets
the length of a run (default 1 quick, 5 full).

### Pipeline

\`BENCH_PIPELINE_TRACE=<n>\` traced jobs for the stage timeline (default 20 quick / 50 full);
\`BENCH_PIPELINE_ONE_PROCESS=0\` skips the one-process rows. Job creation under load (a 3-node
cluster, 16 clients, 30 s) is \`node scripts/load.ts\`, outside the table.

### Memory

VmRSS is read from \`/proc/<pid>/status\` every 250 ms while the loads run (max = peak).

### Services

\`bench/converter.ts\`, \`bench/shots.ts\`, \`bench/labs.ts\` live with their services and export
\`run(): Promise<BenchFigure[]>\`; each row says what its baseline is. A module missing from the
tree is listed as skipped.
`;

/** A text cut at its `### ` headings: [heading line, section text] in order. */
function sections(text: string): [string, string][] {
  return text.split(/\n(?=### )/).map((part) => [part.split('\n')[0]!, part.trimEnd()]);
}

/**
 * EXPLANATION, with the hand-written sections of the existing doc (a service's own figures and
 * what its changes bought, e.g. Converter, Shots) kept where they stood: a run rewrites the table
 * and the generated explanation, never the per-service write-ups.
 */
export function explanationKeeping(existing: string | undefined): string {
  const generated = sections(EXPLANATION);
  const at = existing?.indexOf('## What the figures mean') ?? -1;
  if (!existing || at < 0) return EXPLANATION;
  const known = new Set(generated.map(([h]) => h));
  const out = generated.map(([h, t]) => ({ h, parts: [t] }));
  let after = out[0]!;
  for (const [h, t] of sections(existing.slice(at))) {
    const own = out.find((o) => o.h === h);
    if (own) after = own;
    else if (!known.has(h)) after.parts.push(t);
  }
  return out.flatMap((o) => o.parts).join('\n\n') + '\n';
}

export function writePerformanceDoc(file: string, r: RunInfo, table: string) {
  const explanation = explanationKeeping(existsSync(file) ? readFileSync(file, 'utf8') : undefined);
  const m = r.machine;
  const v = r.versions;
  const text = `# Performance

Produced by \`${r.command}\` (started ${r.startedAt}, finished ${r.finishedAt}). The full JSON
(every sample, machine, versions) is written to \`bench/results/latest.json\` (not committed).

Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGb} GB, ${m.os}; load average at start ${m.loadavgAtStart.join(' / ')}.
Versions: Node ${String(v.node)}, ${String(v.natsServer)}, uWS binary \`${String(v.uws)}\`, autocannon ${String(v.autocannon)}, commit ${String(v.commit)}${v.dirty ? ' (with uncommitted changes)' : ''}.

${table}

${explanation}`;
  writeFileSync(file, text);
}
