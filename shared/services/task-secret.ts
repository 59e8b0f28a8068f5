// Params that ride in a task message only (PlanItem.task.secret: websitepro's request headers and
// cookies), never in the job document: kept beside the new job's result records in memory, and put
// into the task message (`params.secret`) when the gateway publishes the job's tasks at creation.
// (gateway/jobs/create.ts keeps them; shared/jobs/dispatch.ts publishRootTasks puts them in).
// A task held past the wallet's share carries them in its held message, which the release
// publishes as it is (actors/job-supervisor/release.ts). A task published later from the stored job (the supervisor's dispatch of a job left queued) has
// no secret: its worker fails it (refunded) rather than fetch without what the caller sent.
import type { JobRecord, ResultRecord } from '../protocol/jobs.ts';
import type { Plan } from './types.ts';

const secrets = new WeakMap<ResultRecord, Record<string, unknown>>();

/** Remember each result's secret params for the publish that follows (the job record holds none). */
export function keepTaskSecrets(job: Pick<JobRecord, 'results'>, plan: Plan): void {
  const byKey = new Map(plan.items.map((i) => [i.key, i.task?.secret]));
  for (const r of job.results) {
    const s = byKey.get(r.key);
    if (s) secrets.set(r, s);
  }
}

/** The params of a result's task message: its stored params, and its secret when this process still has it. */
export function taskParams(r: ResultRecord): Record<string, unknown> {
  const s = secrets.get(r);
  return s ? { ...(r.params ?? {}), secret: s } : (r.params ?? {});
}
