import type { BenchRow } from './figure.ts';
import type { Cluster } from './lib/cluster.ts';

export async function runPipelineBench(_cluster: Cluster): Promise<{ rows: BenchRow[]; raw: unknown }> {
  return { rows: [{ name: 'pipeline', skipped: 'not written yet' }], raw: null };
}
