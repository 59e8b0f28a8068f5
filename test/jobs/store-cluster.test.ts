// The jobs bucket on a 3-node cluster: concurrent read-modify-writes of one job from every node
// (outcomes of several results, progress, settle steps of two supervisors) never undo each other.
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { startTestCluster } from '../helpers/cluster.ts';
import { BUCKETS } from '../../shared/names.ts';
import { createJobRecord, readJob, updateJob } from '../../shared/jobs/store.ts';
import type { JobRecord } from '../../shared/protocol/jobs.ts';

const job = (id: string, keys: string[]): JobRecord => ({
  id,
  service: 'shots',
  status: 'processing',
  walletId: 'w_store',
  target: '127.0.0.1',
  request: {},
  cost: keys.length * 10,
  refunded: 0,
  createdAt: Date.now(),
  expiresAt: Date.now() + 3600_000,
  results: keys.map((key) => ({ key, status: 'pending' as const, price: 10, refunded: false, subject: 'task.shots' })),
});

t.test('24 concurrent updates of one job from three nodes: every one is kept', async (t) => {
  const tc = await startTestCluster(t);
  const kvs = await Promise.all([0, 1, 2].map(async (i) => new Kvm(await tc.connect(i)).open(BUCKETS.jobs)));
  const keys = Array.from({ length: 8 }, (_, i) => `r${i}`);
  for (let round = 0; round < 5; round++) {
    const id = `job_store_${round}`;
    await createJobRecord(kvs[0]!, job(id, keys));
    // per result: its final outcome and two progress reports, each from another node, all at once
    await Promise.all(
      keys.flatMap((key, i) => [
        updateJob(kvs[i % 3]!, id, (j) => {
          const r = j.results.find((x) => x.key === key)!;
          if (r.status !== 'pending') return false;
          r.status = 'done';
          delete r.progress;
          return true;
        }),
        ...[1, 2].map((n) =>
          updateJob(kvs[(i + n) % 3]!, id, (j) => {
            const r = j.results.find((x) => x.key === key)!;
            if (r.status !== 'pending') return false;
            r.progress = `step ${n}`;
            return true;
          }),
        ),
      ]),
    );
    const stored = (await readJob(kvs[0]!, id))!.job;
    t.same(
      stored.results.filter((r) => r.status !== 'done').map((r) => r.key),
      [],
      `round ${round}: every result done, no outcome undone by a concurrent write`,
    );
  }
});
