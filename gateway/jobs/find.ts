// One job of the caller's wallet, wherever its document is: the `jobs` bucket (read here, as fresh as
// the bucket's leader), else the archive of finished jobs (shared/jobs/archive.ts), which only a
// job-supervisor can find (it keeps each archived job's sequence). A job of another wallet is not found.
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { ApiError } from '../../shared/errors.ts';
import { readJob, isJobId, type StoredJob } from '../../shared/jobs/store.ts';
import { jobsService } from '../../shared/protocol/job-supervisor.ts';

/** The job with its bucket revision (0 for an archived one: it changes no more), or null. */
export async function findJob(nc: NatsConnection, kv: KV, walletId: string, id: string): Promise<StoredJob | null> {
  const cur = await readJob(kv, id);
  if (cur) return cur.job.walletId === walletId ? cur : null;
  if (!isJobId(id)) return null;
  try {
    return { job: (await jobsService.get(nc, { walletId, jobId: id })).job, revision: 0 };
  } catch (e) {
    if (e instanceof ApiError && e.code === 'not_found') return null;
    throw e;
  }
}
