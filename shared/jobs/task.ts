// The task message of one result: what a worker pulls from TASKS (shared/protocol/jobs.ts Task).
// Used by the dispatch of a job's tasks and by a page set's admission of its pages.
import { SERVICE_MODULES } from '../services/index.ts';
import { objectName, type JobRecord, type ResultRecord, type Task } from '../protocol/jobs.ts';

export function taskOf(
  job: Pick<JobRecord, 'id' | 'service' | 'walletId' | 'expiresAt'>,
  r: ResultRecord,
  params: Record<string, unknown> = r.params ?? {},
): Task {
  return {
    v: 1,
    jobId: job.id,
    service: job.service,
    resultKey: r.key,
    walletId: job.walletId,
    store: SERVICE_MODULES[job.service].store,
    objectName: objectName(job.id, r.key),
    expiresAt: job.expiresAt,
    params,
  };
}
