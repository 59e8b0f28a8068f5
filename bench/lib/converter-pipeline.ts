// Measured child of bench/converter.ts: the converter actor (worker-thread pool) behind a real
// nats-server, fed metadata+markdown jobs for pages served on 127.0.0.1, as test/converter's harness
// plays the supervisor. Prints one JSON line: {perCore, wall, peakMb, failed}. The nats-server is
// its own process and not counted.
import { readFileSync } from 'node:fs';
import { startConverter } from '../../test/converter/harness.ts';
import { fixtureServer, html } from '../../test/outbound/fixture-server.ts';

const rssMb = () => {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) / 1024 : process.memoryUsage().rss / 1048576;
};

const { pages, threads, rounds, perRound } = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as { pages: string[]; threads: number; rounds: number; perRound: number };
const teardowns: (() => unknown)[] = [];
const t = { teardown: (fn: () => unknown) => void teardowns.push(fn) };
let peak = rssMb();
const sampler = setInterval(() => { peak = Math.max(peak, rssMb()); }, 50);
try {
  const site = await fixtureServer(t, Object.fromEntries(pages.map((p, i) => [`/p${i}`, html(p)])));
  const urls = pages.map((_, i) => site.url(`/p${i}`));
  const c = await startConverter(t, { websitepro: { concurrency: threads } });
  await Promise.all(urls.map((u) => c.runJob(u, ['metadata', 'markdown']))); // warm the threads
  const perCore: number[] = [];
  const wall: number[] = [];
  let failed = 0;
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const outs = await Promise.all(Array.from({ length: perRound }, (_, i) => c.runJob(urls[i % urls.length]!, ['metadata', 'markdown'], 300000)));
    const d = process.cpuUsage(c0);
    failed += outs.filter((o) => o.metadata?.kind !== 'done' || o.markdown?.kind !== 'done').length;
    perCore.push(perRound / ((d.user + d.system) / 1e6));
    wall.push(perRound / ((performance.now() - t0) / 1000));
  }
  clearInterval(sampler);
  console.log(JSON.stringify({ perCore, wall, peakMb: Math.max(peak, rssMb()), failed }));
} finally {
  for (const fn of teardowns.reverse()) await fn();
}
process.exit(0);
