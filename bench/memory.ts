// Resident memory (VmRSS from /proc/<pid>/status) of every actor process of the cluster, idle and
// while the gateway and pipeline benchmarks load it, against the same reading of a baseline: an
// empty Node process started the same way (`node --import tsx`) holding one NATS connection.
import { setTimeout as sleep } from 'node:timers/promises';
import { figure, quick, type BenchRow } from './figure.ts';
import type { Cluster } from './lib/cluster.ts';
import { spawnTs, waitReady, rssMb, type Proc } from './lib/procs.ts';

export interface MemoryProbe {
  baseline: Proc;
  idle: Record<string, number[]>;
  baselineIdle: number[];
}

/** Idle readings: after the cluster settled, before any load. */
export async function measureIdle(cluster: Cluster): Promise<MemoryProbe> {
  const baseline = spawnTs('idle-node', 'bench/lib/idle-node.ts', [], cluster.env('idle-node'));
  await waitReady(baseline, /ready/);
  await sleep(quick() ? 500 : 2000);
  const idle: Record<string, number[]> = {};
  const baselineIdle: number[] = [];
  const n = quick() ? 3 : 5;
  for (let i = 0; i < n; i++) {
    for (const [name, p] of cluster.procs) (idle[name] ??= []).push(rssMb(p.pid));
    baselineIdle.push(rssMb(baseline.pid));
    await sleep(200);
  }
  return { baseline, idle, baselineIdle };
}

/** Figures from the idle readings and the readings taken while load ran (cluster.sampleRss). */
export async function memoryFigures(cluster: Cluster, probe: MemoryProbe, underLoad: Record<string, number[]>): Promise<BenchRow[]> {
  const baselineNow = rssMb(probe.baseline.pid);
  await probe.baseline.stop();
  const rows: BenchRow[] = [];
  const baseNote = 'baseline: empty `node --import tsx` process with one NATS connection';
  for (const [name, samples] of Object.entries(probe.idle)) {
    rows.push(
      figure({
        name: `RSS ${name} idle`,
        unit: 'MB',
        samples: samples.map(round1),
        baselineSamples: probe.baselineIdle.map(round1),
        note: baseNote,
      }),
    );
  }
  for (const [name, samples] of Object.entries(underLoad)) {
    if (!samples.length) continue;
    rows.push(
      figure({
        name: `RSS ${name} under load`,
        unit: 'MB',
        samples: samples.map(round1),
        baselineSamples: [...probe.baselineIdle, baselineNow].map(round1),
        note: `${baseNote}; readings every 250 ms during the gateway and pipeline loads (max = peak)`,
      }),
    );
  }
  for (const [name, why] of cluster.missing) rows.push({ name: `RSS ${name}`, skipped: why });
  return rows;
}

const round1 = (x: number) => Math.round(x * 10) / 10;
