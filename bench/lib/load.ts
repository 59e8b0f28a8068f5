// The load generator, run as its own process so it never shares an event loop with the server it
// measures or with the bench's own NATS traffic:
//   node --import tsx bench/lib/load.ts '<json LoadSpec>'   one run, one JSON line (LoadResult) on stdout
//   node --import tsx bench/lib/load.ts --serve             one JSON LoadSpec per stdin line, one
//                                                           LoadResult line each (runs one at a time)
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { percentile } from '../figure.ts';

export interface LoadSpec {
  url: string;
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** One header set per connection, round robin (e.g. a different API key per connection). */
  perConnection?: Record<string, string>[];
  body?: string;
  connections: number;
  /** Seconds. */
  duration: number;
}

export interface LoadResult {
  /** 2xx answers per second. */
  okRps: number;
  /** All answers per second. */
  rps: number;
  /** Latencies in ms of the 2xx answers, from every answer (not autocannon's whole-ms histogram). */
  p50: number;
  p99: number;
  avg: number;
  total: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  duration: number;
}

export async function load(spec: LoadSpec): Promise<LoadResult> {
  let n = 0;
  const per = spec.perConnection ?? [];
  const instance = autocannon({
    url: spec.url,
    method: spec.method,
    headers: spec.headers ?? {},
    ...(spec.body !== undefined ? { body: spec.body } : {}),
    connections: spec.connections,
    duration: spec.duration,
    pipelining: 1,
    ...(per.length
      ? {
          setupClient: (client: { setHeaders(h: Record<string, string>): void }) =>
            client.setHeaders({ ...(spec.headers ?? {}), ...per[n++ % per.length] }),
        }
      : {}),
  } as autocannon.Options);
  // autocannon's histogram keeps whole milliseconds, too coarse for a server that answers in less
  // than one: keep every 2xx latency (hrtime, fractional ms) and take the percentiles from those
  const latencies: number[] = [];
  instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
    if (status >= 200 && status < 300) latencies.push(ms);
  });
  const r = await instance;
  const statusCodes: Record<string, number> = {};
  for (const [code, v] of Object.entries(
    (r as unknown as { statusCodeStats?: Record<string, { count: number | string }> }).statusCodeStats ?? {},
  ))
    statusCodes[code] = Number(v.count);
  const ok = (r['2xx'] as number) ?? 0;
  const total = ok + r.non2xx;
  return {
    okRps: ok / r.duration,
    rps: total / r.duration,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    avg: latencies.reduce((a, b) => a + b, 0) / (latencies.length || 1),
    total,
    ok,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    statusCodes,
    duration: r.duration,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === '--serve') {
    process.stdout.write('ready\n');
    for await (const line of createInterface({ input: process.stdin })) {
      if (!line.trim()) continue;
      try {
        process.stdout.write(JSON.stringify(await load(JSON.parse(line) as LoadSpec)) + '\n');
      } catch (e) {
        process.stdout.write(JSON.stringify({ error: (e as Error).message }) + '\n');
      }
    }
  } else {
    process.stdout.write(JSON.stringify(await load(JSON.parse(process.argv[2] ?? '{}') as LoadSpec)) + '\n');
  }
}
