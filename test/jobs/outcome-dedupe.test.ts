import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { startTestNats } from '../helpers/nats.ts';
import { publishOutcome } from '../../shared/worker.ts';
import { STREAMS } from '../../shared/names.ts';
import type { Outcome } from '../../shared/protocol/jobs.ts';

t.test('a worker retry of its outcome is deduplicated; the supervisor backstop is never swallowed by it', async (t) => {
  const { nc } = await startTestNats(t);
  const jsm = await jetstreamManager(nc);
  const count = async () => (await jsm.streams.info(STREAMS.results)).state.messages;
  const o: Outcome = { v: 1, kind: 'failed', jobId: 'job_d', resultKey: 'quick', at: Date.now(), error: 'timeout' };
  await publishOutcome(nc, o);
  await publishOutcome(nc, o);
  t.equal(await count(), 1, 'the worker retry counted once');
  await publishOutcome(nc, { ...o, error: 'worker_lost' }, 'supervisor');
  t.equal(await count(), 2, 'the backstop outcome is stored despite the earlier one');
  await publishOutcome(nc, { ...o, error: 'worker_lost' }, 'supervisor');
  t.equal(await count(), 2, 'and its own retries are deduplicated');
});
