// The job supervisor's service endpoints: reads of its SQLite projection of the jobs bucket.
import { Type as T } from '@sinclair/typebox';
import { MICRO, subjects } from '../names.ts';
import type { JobRecord } from './jobs.ts';
import { client } from '../micro.ts';
import { endpoint, stored, type ServiceApi } from './endpoint.ts';

/** The most jobs one list answers (the spec's `limit` maximum): the supervisor's projection keeps each wallet's newest this many documents. */
export const LIST_MAX = 100;

export const jobsApi = {
  list: endpoint({
    subject: subjects.jobs.list,
    summary: "A wallet's most recent jobs, newest first; includes a job created just before",
    request: T.Object({
      walletId: T.String({ minLength: 1 }),
      limit: T.Optional(T.Integer({ minimum: 1, maximum: LIST_MAX, default: 30 })),
    }),
    reply: T.Object({ jobs: T.Array(stored<JobRecord>('JobRecord')) }),
  }),
  get: endpoint({
    subject: subjects.jobs.get,
    summary: "One job of a wallet (not_found for another wallet's)",
    request: T.Object({ walletId: T.String({ minLength: 1 }), jobId: T.String() }),
    reply: T.Object({ job: stored<JobRecord>('JobRecord') }),
  }),
  stats: endpoint({
    subject: subjects.jobs.stats,
    summary: "Job counts from the supervisor's projection (stored, unfinished, the oldest unfinished) and how it started",
    request: T.Object({}),
    reply: T.Object({
      total: T.Integer(),
      unfinished: T.Integer(),
      oldestUnfinished: T.Union([T.Null(), T.Object({ id: T.String(), createdAt: T.Integer() })]),
      projection: T.Object({
        complete: T.Boolean(),
        mode: T.String(),
        reason: T.Optional(T.String()),
        appliedAtStart: T.Integer(),
        appliedSinceStart: T.Integer(),
        /** Still applying what the streams held at start (a resumed copy behind them): the list answers 503 meanwhile. */
        catchingUp: T.Optional(T.Boolean()),
      }),
    }),
  }),
};

export const JOB_SUPERVISOR_API: ServiceApi = {
  service: MICRO.jobSupervisor,
  description: "Job state: a wallet's recent jobs (SQLite projection of the jobs bucket)",
  endpoints: Object.values(jobsApi),
};

export const jobsService = { list: client(jobsApi.list), get: client(jobsApi.get), stats: client(jobsApi.stats) };
