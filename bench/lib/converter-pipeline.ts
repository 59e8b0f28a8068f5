// Measured side of bench/converter.ts: the converter actor in a process of its own
// (bench/lib/converter-actor.ts) behind a real nats-server, fed metadata+markdown jobs by the test
// harness playing the supervisor, for pages served on 127.0.0.1. The web server, the harness and
// the nats-server stand for other machines and are not counted: CPU time and peak VmRSS are the
// converter process's only. Prints one JSON line: {perCore, wall, peakMb, failed}.
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestNats } from '../../test/helpers/nats.ts';
import { jobRunner } from '../../test/converter/harness.ts';
import { fixtureServer, html } from '../../test/outbound/fixture-server.ts';
import { spawnTs, waitReady, rssMb } from './procs.ts';

const { pages, threads, rounds, perRound } = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as {
  pages: string[];
  threads: number;
  rounds: number;
  perRound: number;
};
const teardowns: (() => unknown)[] = [];
const t = { teardown: (fn: () => unknown) => void teardowns.push(fn) };
try {
  const site = await fixtureServer(t, Object.fromEntries(pages.map((p, i) => [`/p${i}`, html(p)])));
  const urls = pages.map((_, i) => site.url(`/p${i}`));
  const nats = await startTestNats(t, { websitepro: { concurrency: threads } });
  const file = join(mkdtempSync(join(tmpdir(), 'bench-conv-actor-')), 'actor.json');
  writeFileSync(file, JSON.stringify({ url: nats.server.url, config: nats.config }));
  const actor = spawnTs('converter', 'bench/lib/converter-actor.ts', [file], {});
  t.teardown(() => actor.stop());
  await waitReady(actor, null);
  const cpu = () =>
    new Promise<NodeJS.CpuUsage>((resolve) => {
      actor.child.once('message', (m: { cpu: NodeJS.CpuUsage }) => resolve(m.cpu));
      actor.child.send({ cpu: true });
    });
  const c = await jobRunner(nats);
  let peak = rssMb(actor.pid);
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb(actor.pid) || 0);
  }, 50);
  await Promise.all(urls.map((u) => c.runJob(u, ['metadata', 'markdown']))); // warm the threads
  const perCore: number[] = [];
  const wall: number[] = [];
  let failed = 0;
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    const c0 = await cpu();
    const outs = await Promise.all(
      Array.from({ length: perRound }, (_, i) => c.runJob(urls[i % urls.length]!, ['metadata', 'markdown'], 300000)),
    );
    const c1 = await cpu();
    failed += outs.filter((o) => o.metadata?.kind !== 'done' || o.markdown?.kind !== 'done').length;
    perCore.push(perRound / ((c1.user - c0.user + c1.system - c0.system) / 1e6));
    wall.push(perRound / ((performance.now() - t0) / 1000));
  }
  clearInterval(sampler);
  console.log(JSON.stringify({ perCore, wall, peakMb: Math.max(peak, rssMb(actor.pid) || 0), failed }));
} finally {
  for (const fn of teardowns.reverse()) await fn();
}
process.exit(0);
