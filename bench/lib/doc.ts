// docs/performance.md: the latest full table, what each figure means, the command, the machine.
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
ratio below 1 means the gateway serves fewer requests than the baseline; for latency and memory a
ratio above 1 means it is slower or heavier. Absolute numbers depend on the machine and on what
else runs on it; ratios are what to compare between runs.

### Gateway (\`bench/gateway.ts\`)

The gateway runs as its own process (\`node --import tsx main.ts gateway\`), with the wallet
actor in another, against a throwaway \`nats-server\` started by the bench. Load comes from
autocannon in a separate child process (\`bench/lib/load.ts\`), 1 request in flight per connection,
one API key (and wallet) per connection. Each endpoint is measured against two baselines, each also
its own process and loaded the same way; runs rotate between the three servers. The gateway bench
runs no converter: a stand-in \`websitepro\` catalogue entry lets quotes price (a quote contacts no
worker). \`BENCH_GATEWAY_ENDPOINTS=balance,quote\` measures only those rows;
\`BENCH_GATEWAY_PROF=<dir>\` writes a V8 CPU profile of the gateway process when it stops.

- **bare uWS**: a uWebSockets.js handler (the same native build the gateway loads) that answers
  the path with the bytes the gateway answered (captured at the start of the run). No parsing, no
  NATS, no JSON work: the limit of the HTTP stack (and, near it, of the load generator on this
  machine).
- **node:http**: a plain \`node:http\` server doing the same work with the same code
  (\`bench/lib/baseline-server.ts\`): the gateway's route handlers from \`gateway/routes\`, Ajv with
  the gateway's options and the same TypeBox schemas, the gateway's own auth step
  (\`gateway/pipeline/auth.ts\`: key lookup in the \`keys\` bucket behind the same 30 s cache) and
  limit step (\`gateway/pipeline/limit.ts\`: the same \`LocalLimiter\` in memory per key or per client
  address; the shared \`limits\` bucket only for job creation, as in the gateway), the same NATS
  reads (balances from the ledger as of now, \`gateway/balances.ts\`; the catalogue copy), and the
  same precomputed bytes for \`fixedAnswer\` routes, rebuilt on the same catalogue changes. It
  leaves out Prometheus metrics and OPTIONS/405 handling.

What each row's baselines do, per endpoint (the gateway's work is the same as node:http's):

| endpoint | gateway and node:http, per request | bare uWS |
|---|---|---|
| \`GET /v1\`, \`GET /v1/pricing\` | per-address \`LocalLimiter\`, request id, bytes built once at start (\`fixedAnswer\`) | replays the captured bytes with a fresh request id |
| \`GET /v1/services\` | per-address \`LocalLimiter\`, request id, bytes rebuilt when the catalogue watch delivers a change (no NATS per request) | replays the captured bytes |
| \`GET /v1/balance\` | auth cache hit, per-key \`LocalLimiter\`, the ledger's last sequence (one request shared by the reads arriving together: a direct get of the last entry with one replica, else stream info), the wallet's last entry from the gateway's ledger consumer, JSON | replays the captured bytes |
| \`POST /v1/websitepro/quote\` | the same plus body read, JSON parse, Ajv, pricing, the catalogue copy (no request while it shows a converter) | reads the body, replays the bytes |

Endpoints: \`GET /v1\`, \`GET /v1/pricing\` (public: rate limit per client address, answer built from
config); \`GET /v1/services\` (public, live catalogue, precomputed); \`GET /v1/balance\` (key lookup,
per-key rate limit, balance as of now from the ledger); \`POST /v1/websitepro/quote\` (the same,
plus body read, JSON parse, Ajv validation and pricing). The row **ledger last sequence as of now**
measures the one NATS round trip of a balance read alone: as many readers as connections share
requests through \`shared/nats/fresh.ts\`, asking the ledger's last sequence by a direct get (what a
gateway does with one replica) against a stream-info request (what it does when replicated).
**req/s** counts 2xx answers only; the note of each row gives non-2xx and error counts if any.
**p99** is the 99th percentile latency of the 2xx answers, from every answer's own time
(autocannon's \`response\` event, fractional ms; its built-in histogram keeps whole milliseconds,
which reads 0 for the bare baseline).

The row **HTTP layer alone** puts the two baselines of the \`/v1/pricing\` (1 address per
connection) rows against each other: bare uWS and node:http answering the same precomputed bytes,
node:http doing only the limiter, the request id and the write. It is the most uWS's HTTP layer
can give over node:http's on this machine, and so the ceiling of every "vs node:http" ratio of a
route whose work both servers share: with a shared cost H per request, uWS's own cost U and
node:http's N, the ratio is (N + H) / (U + H), at most N / U and falling as H grows. It measured
1.29-1.54x in session 15's quiet runs: issue 17's "authenticated reads >= 1.5x node:http, with
the same code in both" would need a balance read that costs nothing, and is not reachable by the
gateway (the gateway's own fixed answer measured 1.36-1.66x node:http in the same runs).

The bench raises the request rate limits so they never refuse (a token is still taken per
request), allows 127.0.0.1 as a target, and logs at \`warn\` (no access-log line per
request) - in the gateway and the node:http baseline alike.

### Pipeline (\`bench/pipeline.ts\`)

A \`websitepro\` job with the \`metadata\` output for a page served by a \`node:http\` fixture on
127.0.0.1, created through the gateway, until the job is \`completed\` (gateway → wallet charge → task →
job document, already dispatched → converter → result → supervisor → the gateway's shared watch). Baseline: the
converter's own fetch-and-convert functions called directly in one process, for the same page.
The ratio is the pipeline's overhead. The client is \`node:http\` with a keep-alive agent (undici's
\`fetch\` added 0.15-0.35 ms of client time per job; it is no part of the system). The rows run
twice: one process per actor (the Procfile's layout, unmarked), and, marked **one process (npm
start)**, every actor and the gateway in one process as the embedded default runs them (issue 17
states its goal for it; its nats-server is the bench's, as with \`NATS_URL\` set;
\`BENCH_PIPELINE_ONE_PROCESS=0\` skips them).

**Writes per job** (\`bench/lib/traffic.ts\`): jobs run one after another while a wildcard
subscription on its own connection counts the traffic. *JetStream writes* is how far every
stream's last sequence moved (KV buckets and object stores included: a put, a delete marker and a
stream publish each take one), split by stream in the note; *core requests* are messages with a
reply subject outside streams, the JetStream API and inboxes (actor-to-actor request/reply, e.g.
\`wallet.charge\`). JetStream API calls (by kind) and acks are in the note. A count has no baseline
(the direct call makes no NATS traffic): the column shows \`-\`. Issue 17 brought the count from
20 to 10 writes per job (1 core request, the charge, instead of 2): the job document is written
once, already dispatched; progress lines are core messages; the outcome that delivers the last
result finishes the job in the same write. Round trips went further than writes: the shared job
limit is one write (no read), the charge reads nothing before its ledger write, a result file is
stored in one round trip (chunk and meta together), the supervisor reads nothing before its write;
see \`docs/notes/issue-17.md\`.

**Stage timeline** (\`bench/lib/timeline.ts\`; \`BENCH_PIPELINE_TRACE=<n>\` jobs, default 20 quick /
50 full, 0 for none; \`BENCH_PIPELINE_TRACE_DUMP=1\` prints the fastest job's wire trace): the same
wildcard subscription stamps every message of a job as it reaches the bench (the charge and its
reply, each stream publish and its ack, the task's delivery to the converter, the object-store
puts, the outcome's delivery to the supervisor, its write and the watch's push to the gateway);
the page fixture stamps the fetch. Each traced job is followed by one direct call, so the two meet
the same moment of the machine. The row's value is the median job; its note gives the median step
of every stage and three segments per job: before the fetch, fetch + conversion, after it (the
direct call has only the middle one). No code of the system runs for it.

**Job creation under load** (\`scripts/load.ts\`: its own 3-node cluster, 16 clients creating
websitepro, shots and labs jobs for 30 s and long-polling them; not part of \`npm run bench\`; rerun
with \`node --import tsx scripts/load.ts\`). Issue 17, session 13, one run each, back to back on the
shared 2-core machine (load average 22 → 36 during the first, 35 → 38 during the second: not quiet):

| code | jobs created in 31 s | jobs/s | creation p50 | p90 | p99 | audit |
|---|---|---|---|---|---|---|
| before (36f12e2: job.submitted, supervisor dispatch, stored progress, a watch per poll) | 474 | 15.2 | 1013 ms | 1389 ms | 1837 ms | clean |
| after (dispatch at creation, core progress, shared watch, cached supervisor ping) | 548 | 17.6 | 860 ms | 1322 ms | 1675 ms | clean |

In both runs about 45 shots jobs were still queued behind the single Chromium pool when the
120 s drain ended (2 cores); none failed, none was lost.

Issue 17, session 15, on a quiet machine (nothing else running; one run each, back to back):

| code | jobs created in 30 s | jobs/s | creation p50 | p90 | p99 | finished | audit |
|---|---|---|---|---|---|---|---|
| before (dca06c8, the session's start) | 1021 | 33.8 | 432 ms | 743 ms | 1015 ms | 1021 of 1021 | clean |
| after (one-write limit, charge without a head read, one-round-trip files, prepared projections, no Error per request) | 1230 | 40.3 | 359 ms | 614 ms | 1007 ms | 1230 of 1230 | clean |

### Memory (\`bench/memory.ts\`)

VmRSS from \`/proc/<pid>/status\` of each actor process, idle (after start, before any load) and
every 250 ms while the gateway and pipeline loads run (max = peak). Baseline: an empty
\`node --import tsx\` process holding one NATS connection (\`bench/lib/idle-node.ts\`).

### Services

\`bench/converter.ts\`, \`bench/shots.ts\`, \`bench/labs.ts\` are written with their services and
export \`run(): Promise<BenchFigure[]>\`; each row says what its baseline is. A module missing from
the tree is listed as skipped.
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
