// Quote and job creation, generic over the service modules. The order is the money rule of the
// design: validate → plan (price) → the wallet's queue bound → precheck → charge → publish the tasks → write the
// job, already dispatched (the commit point). A failure after the charge and before the commit point is
// compensated by refunding every result before the error is answered.
import { keepTaskSecrets } from '../../shared/services/index.ts';
import { jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Config } from '../../shared/config/index.ts';
import type { Logger } from '../../shared/log.ts';
import { ApiError } from '../../shared/errors.ts';
import { isTransientNatsError, transientKind } from '../../shared/nats/transient.ts';
import { isCasConflict } from '../../shared/nats/cas.ts';
import { newId } from '../../shared/ids.ts';
import { MICRO, STREAMS, subjects, type ServiceName } from '../../shared/names.ts';
import { SERVICE_MODULES, type Plan, type PlanContext } from '../../shared/services/index.ts';
import { wallet, walletApi, toEur } from '../../shared/protocol/wallet.ts';
import { readBalance } from '../balances.ts';
import { SLOTS_RESULT_KEY, type JobRecord, type JobSubmitted, type ResultRecord } from '../../shared/protocol/jobs.ts';
import type { QuoteDoc } from '../../shared/schemas/api.ts';
import { createJobRecord, publishJobEvent, readJob } from '../../shared/jobs/store.ts';
import { claimDatasetMark, confirmDatasetMark, isDatasetFee, releaseDatasetMark } from '../../shared/services/index.ts';
import { withRetry, sleep } from '../../shared/runtime.ts';
import { markDispatched, publishRootTasks } from '../../shared/jobs/dispatch.ts';
import { walletTasks, type WalletTasks } from '../../shared/jobs/share.ts';
import { failpoint } from '../../shared/failpoints.ts';

export interface JobDeps {
  nc: NatsConnection;
  js: JetStreamClient;
  config: Config;
  log: Logger;
  kv: { jobs: KV; catalogue: KV; datasets: KV };
  /** This gateway's public base URL (its real port when PORT=0), recorded in the job for its webhook. */
  baseUrl?: string;
}

const planContext = (d: JobDeps, walletId: string): PlanContext => ({
  config: d.config,
  nc: d.nc,
  walletId,
  catalogueKv: d.kv.catalogue,
  datasetsKv: d.kv.datasets,
  datasetStale: { jobs: d.kv.jobs, staleMs: jobMayAppearMs(d.config) },
});
const costOf = (plan: Plan) => plan.items.reduce((s, i) => s + i.price, 0);

/** Free: plan only. Nothing is fetched (no precheck), charged, written or published. */
export async function quoteJob(d: JobDeps, service: ServiceName, body: unknown, walletId: string): Promise<QuoteDoc> {
  const plan = await SERVICE_MODULES[service].plan(body, planContext(d, walletId));
  const cost = costOf(plan);
  const balance = await readBalance(d.nc, walletId);
  return {
    service,
    target: plan.target,
    cost,
    eur: toEur(cost),
    balance,
    sufficient: balance >= cost,
    items: plan.items.map((i) => ({
      key: i.key,
      price: i.price,
      ...(i.oneTime ? { oneTime: true } : {}),
      ...(i.quantity !== undefined ? { quantity: i.quantity, unitPrice: i.unitPrice } : {}),
    })),
  };
}

const jsmCache = new WeakMap<NatsConnection, JetStreamManager>();
async function jsmOf(nc: NatsConnection): Promise<JetStreamManager> {
  let jsm = jsmCache.get(nc);
  if (!jsm) {
    jsm = await jetstreamManager(nc);
    jsmCache.set(nc, jsm);
  }
  return jsm;
}

/**
 * The wallet's queue bound (`limits.queueMax`): its unfinished tasks, taken or held past its share,
 * counted in the TASKS stream by the wallet's subjects (shared/jobs/share.ts). Another wallet's
 * backlog never refuses this one.
 */
export async function checkQueue(d: JobDeps, walletId: string, newTasks: number): Promise<WalletTasks> {
  const w = await walletTasks(await jsmOf(d.nc), walletId);
  const queued = w.taken + w.held;
  if (queued + newTasks > d.config.limits.queueMax) {
    throw new ApiError(
      'busy',
      `this key's wallet has ${queued} unfinished tasks (at most ${d.config.limits.queueMax}); retry once some have finished`,
      undefined,
      { 'Retry-After': '30' },
    );
  }
  return w;
}

/** How long a job-supervisor's answer to the ping is taken as "one is running". */
const SUPERVISOR_SEEN_MS = 1000;
const supervisorSeen = new WeakMap<NatsConnection, number>();

/**
 * No job-supervisor instance answering its micro service ping: a job created now would stay queued,
 * charged, until one comes back. Refused with 503 before any charge instead.
 */
export async function checkSupervisor(d: Pick<JobDeps, 'nc'>, timeoutMs = 2000): Promise<void> {
  // An answer stands for a second: under steady traffic a creation costs no ping of its own. A
  // supervisor that dies within it leaves a job that waits, its tasks and outcomes kept in their
  // streams, for the next one (the same as a supervisor that dies just after the ping).
  if (Date.now() - (supervisorSeen.get(d.nc) ?? -Infinity) < SUPERVISOR_SEEN_MS) return;
  try {
    await d.nc.request(`$SRV.PING.${MICRO.jobSupervisor}`, '', { timeout: timeoutMs });
    supervisorSeen.set(d.nc, Date.now());
  } catch (e) {
    if (isTransientNatsError(e) || /no responders|timeout/i.test(String((e as Error)?.message))) {
      throw new ApiError('service_unavailable', 'no job-supervisor instance is running; nothing was charged', {}, { 'retry-after': '5' });
    }
    throw e;
  }
}

/** The compensation step: give back every result of a job whose charge cannot be followed through. */
export async function refundWholeJob(
  nc: NatsConnection,
  walletId: string,
  jobId: string,
  items: { key: string; price: number }[],
): Promise<number | null> {
  let balance: number | null = null;
  for (const i of items) {
    if (i.price <= 0) continue;
    // idempotent per (jobId, key) on the wallet side, so retrying is safe; 5 tries over ~4 s
    balance = (
      await withRetry('refund', () => wallet.refund(nc, { walletId, jobId, resultKey: i.key, amount: i.price }), { timeoutMs: 4_000 })
    ).balance;
  }
  return balance;
}

export function newJobRecord(
  service: ServiceName,
  plan: Plan,
  walletId: string,
  request: Record<string, unknown>,
  config: Config,
  now = Date.now(),
  id = newId('job'),
): JobRecord {
  // a page set's items price its pages; its results are made page by page (shared/jobs/pages.ts)
  const results: ResultRecord[] = (plan.pageSet ? [] : plan.items).map((i) => ({
    key: i.key,
    status: 'pending',
    price: i.price,
    refunded: false,
    ...(i.oneTime ? { oneTime: true } : {}),
    ...(i.needsDataset !== undefined ? { needsDataset: i.needsDataset } : {}),
    ...(i.task ? { subject: i.task.subject, params: i.task.params } : {}),
    ...(i.after ? { after: i.after } : {}),
  }));
  return {
    id,
    service,
    status: 'queued',
    walletId,
    target: plan.target,
    request,
    cost: costOf(plan),
    refunded: 0,
    createdAt: now,
    expiresAt: now + SERVICE_MODULES[service].retentionSeconds(config) * 1000,
    results,
    ...(plan.pageSet ? { pageSet: structuredClone(plan.pageSet) } : {}),
    // labs sends its reports per result from the prober; the other services once, when the job ends
    ...(service !== 'labs' && typeof request.webhook === 'string'
      ? { webhook: { url: request.webhook, state: 'waiting' as const, tries: 0, attempts: [] } }
      : {}),
  };
}

export async function publishSubmitted(js: JetStreamClient, job: Pick<JobRecord, 'id' | 'service'>): Promise<void> {
  const m: JobSubmitted = { v: 1, jobId: job.id, service: job.service };
  await js.publish(subjects.jobSubmitted(job.service), JSON.stringify(m), { msgID: job.id });
}

/**
 * Create a job: charges it in full, writes it and hands it to the supervisor. `limited`: the shared
 * job limit's decision still in flight (RouteRequest.limited); nothing with an effect happens before
 * it allowed the creation.
 */
export async function submitJob(
  d: JobDeps,
  service: ServiceName,
  body: Record<string, unknown>,
  walletId: string,
  limited?: Promise<void>,
  jobId?: string,
): Promise<{ job: JobRecord; balance: number }> {
  const mod = SERVICE_MODULES[service];
  const ctx = planContext(d, walletId);
  const plan = await mod.plan(body, ctx);
  // The limit's write and two reads, independent of each other: asked together, one round trip
  // instead of one each, and answered in the order they were always checked (the limit first), so
  // the error a caller sees is the same.
  const checks = await Promise.allSettled([
    limited ?? Promise.resolve(),
    checkSupervisor(d),
    checkQueue(d, walletId, plan.items.filter((i) => i.task).length),
  ]);
  for (const c of checks) if (c.status === 'rejected') throw c.reason;
  // The wallet's tasks at this count: a task that finishes before the publish only frees more, so the
  // publish decides from it without a count of its own.
  const counts = (checks[2] as PromiseFulfilledResult<WalletTasks>).value;
  // After the limit: the precheck connects to the target (and labs takes one of the relay's tests),
  // which a key over its limit must not be able to make us do at its own rate.
  await mod.precheck?.(body, plan, ctx);

  const job = newJobRecord(service, plan, walletId, body, d.config, Date.now(), jobId);
  // request headers and cookies ride in the task messages only, never in the stored job
  keepTaskSecrets(job, plan);
  if (d.baseUrl) job.baseUrl = d.baseUrl;
  return commitJob(d, job, { counts });
}

/**
 * Claim the wallet's dataset mark → charge → write (commit point) → publish. Compensates the charge
 * if the write fails; gives the mark back whenever the job will not exist.
 */
/** What the compensation gives back: every result, or a page set's whole charge as its one `_slots` entry. */
const refundItems = (job: JobRecord) => (job.pageSet ? [{ key: SLOTS_RESULT_KEY, price: job.cost }] : job.results);

export async function commitJob(
  d: JobDeps,
  planned: JobRecord,
  opts: {
    /** The wallet's tasks as counted before the charge (absent: counted at the publish). */
    counts?: WalletTasks;
  } = {},
): Promise<{ job: JobRecord; balance: number }> {
  let job = planned;
  const walletId = job.walletId;
  // The one-time dataset fee: only the job that wins the wallet's mark carries it, so concurrent
  // first jobs of a wallet pay it once. A job that lost the race is created without it.
  let markClaimed = false;
  const fee = job.results.find(isDatasetFee);
  if (fee) {
    // a job document is written within half the orphan grace of the charge plus the store's retries,
    // or never (see commitJob): a mark older than that without its job is abandoned
    const staleMs = jobMayAppearMs(d.config);
    markClaimed = (await claimDatasetMark(d.kv.datasets, walletId, job.id, { jobs: d.kv.jobs, staleMs })) !== null;
    if (markClaimed) failpoint('gateway.after-dataset-claim');
    if (!markClaimed) {
      const results = job.results.filter((r) => r !== fee);
      job = { ...job, results, cost: results.reduce((s, r) => s + r.price, 0) };
    }
  }
  const giveMarkBack = async () => {
    if (!markClaimed) return;
    // left held, the wallet would never pay the fee again: an operator's loss, logged
    await releaseDatasetMark(d.kv.datasets, walletId, job.id).catch((err) =>
      d.log.error({ err, jobId: job.id, walletId }, 'dataset mark of a job that does not exist not given back'),
    );
  };
  const asked = Date.now();
  let balance: number;
  try {
    // answerBy a second before this request times out: a wallet that gets it later (paused,
    // overloaded) refuses it, instead of charging a creation already answered 503
    ({ balance } = await wallet.charge(d.nc, {
      walletId,
      jobId: job.id,
      amount: job.cost,
      answerBy: asked + walletApi.charge.timeoutMs - 1000,
    }));
    failpoint('gateway.after-charge');
  } catch (e) {
    // the job will not be written (an unanswered charge is refunded by the orphan sweep)
    await giveMarkBack();
    // No answer: the charge may or may not be written. If it was, the wallet's orphan sweep
    // refunds it once no job document appears (actors/wallet/orphans.ts), so "nothing charged" holds.
    if (e instanceof ApiError && e.code === 'service_unavailable') {
      throw new ApiError(
        'service_unavailable',
        'the wallet did not answer; nothing was charged (a charge that went through without an answer is refunded automatically)',
        {},
        { 'retry-after': '5' },
      );
    }
    throw e;
  }
  // The orphan sweep refunds charges with no job after the grace: a job written later than half of
  // it would run unpaid, so a late one is abandoned and refunded here.
  if (Date.now() - asked > (d.config.wallet.orphanChargeGraceSeconds * 1000) / 2) {
    await refundWholeJob(d.nc, walletId, job.id, refundItems(job)).catch((err) =>
      d.log.warn({ err, jobId: job.id }, 'late charge: refund left to the orphan sweep'),
    );
    await giveMarkBack();
    throw new ApiError('service_unavailable', 'the wallet answered too late; the charge was refunded', {}, { 'retry-after': '5' });
  }

  // The tasks go out before the document, which is then written once, already dispatched: no
  // supervisor step between the creation and the work. A worker that finishes before the document
  // is stored has its outcome retried by the supervisor until it appears (recordOutcome). Tasks
  // that could not be published leave the job `queued` for the supervisor's dispatch (the backstop).
  // Tasks past the wallet's share are held in TASKS (shared/jobs/share.ts); the supervisor
  // publishes them to workers as the wallet's tasks finish.
  const published = await publishRootTasks(d.js, await jsmOf(d.nc), d.config, job, STORE_TIMEOUT_MS, opts.counts).catch((err) => {
    d.log.warn({ err, jobId: job.id }, 'tasks not published at creation; the supervisor dispatches the job');
    return null;
  });
  if (published) {
    failpoint('gateway.after-tasks');
    job = structuredClone(job);
    // a held task's sequence too: the backstops that remove a result's task remove a held one as well
    markDispatched(job, new Map([...published.taken, ...published.held]));
  }
  const store = await storeNewJob(d, job);
  if (store.stored) failpoint('gateway.after-job-write');
  if (store.stored) {
    // the job exists: its mark is never taken over (a failed confirmation is done by a later plan)
    if (markClaimed)
      await confirmDatasetMark(d.kv.datasets, walletId, job.id).catch((err) =>
        d.log.warn({ err, jobId: job.id, walletId }, 'dataset mark not confirmed; the next plan of the wallet confirms it'),
      );
    return afterCommit(d, job, balance);
  }
  if (store.maybe) {
    // A write timed out and nothing settled whether it was stored: it may still appear. Refunding
    // now could let a stored job run unpaid; the orphan sweep refunds the charge after its grace
    // if no document exists by then (actors/wallet/orphans.ts). The client learns the job id.
    d.log.error({ err: store.err, jobId: job.id }, 'job document may or may not be stored; its charge is left to the orphan sweep');
    throw new ApiError(
      'service_unavailable',
      `the job may not have been created (the message system is failing over): look for ${job.id} in GET /v1/jobs before creating it again; if it does not appear, its charge is refunded automatically within ${d.config.wallet.orphanChargeGraceSeconds * 2} s`,
      { jobId: job.id },
      { 'retry-after': '5' },
    );
  }
  d.log.error({ err: store.err, jobId: job.id }, 'job could not be written after the charge; refunding');
  if (published) await withdrawTasks(d.nc, [...published.taken.values(), ...published.held.values()]);
  await giveMarkBack();
  const refunded = await refundWholeJob(d.nc, walletId, job.id, refundItems(job)).then(
    () => true,
    (err) => {
      // the ledger's `audit` shows this charge without a job; the orphan sweep refunds it after its
      // grace (no document was stored), and an operator sees it in the audit until then
      d.log.fatal({ err, jobId: job.id, walletId, cost: job.cost }, 'COMPENSATION FAILED: charge without job, left to the orphan sweep');
      return false;
    },
  );
  if (!refunded)
    throw new ApiError(
      'service_unavailable',
      `the job could not be created; its charge is refunded automatically within ${d.config.wallet.orphanChargeGraceSeconds * 2} s`,
      { jobId: job.id },
      { 'retry-after': '5' },
    );
  // NATS failing over: nothing charged in the end, worth a retry (the spec's 503)
  if (isTransientNatsError(store.err))
    throw new ApiError(
      'service_unavailable',
      'the job could not be stored (the message system is failing over); the charge was refunded; retry in a few seconds',
      { jobId: job.id },
      { 'retry-after': '5' },
    );
  throw new ApiError('internal', 'the job could not be created; the charge was refunded', { jobId: job.id });
}

/**
 * How long after its creation started a job document may still appear: within half the orphan grace
 * of the charge plus the store's retries, or never (commitJob). Past it, a creation that left no job
 * will never leave one.
 */
export const jobMayAppearMs = (config: Config) => config.wallet.orphanChargeGraceSeconds * 1000 + 2 * (STORE_RETRY_MS + STORE_TIMEOUT_MS);

/** How long a job document write is retried through a failover before the job is given up. */
const STORE_RETRY_MS = 5000;
/** Bound of one write of the job document (a failover's timeouts would otherwise take 5 s each). */
const STORE_TIMEOUT_MS = 2000;

type StoreResult = { stored: true } | { stored: false; err: unknown; maybe: boolean };

/**
 * Write the new job document, retried with backoff for STORE_RETRY_MS through a failover. A retry
 * cannot write twice: the create expects no earlier revision (shared/nats/cas.ts), so a conflict
 * means an earlier try of ours was stored (job ids are random)
 * and a later success means none was. `maybe`: a try timed out and nothing settled it since, so
 * the document may still appear.
 */
async function storeNewJob(d: JobDeps, job: JobRecord): Promise<StoreResult> {
  const until = Date.now() + STORE_RETRY_MS;
  let maybe = false;
  for (let wait = 200; ; wait = Math.min(wait * 2, 1000)) {
    let err: unknown;
    try {
      await createJobRecord(d.kv.jobs, job, STORE_TIMEOUT_MS);
      return { stored: true };
    } catch (e) {
      err = e;
    }
    const kind = transientKind(err);
    if (kind === 'timeout' || isCasConflict(err)) {
      maybe = true;
      const written = await readJob(d.kv.jobs, job.id).catch(() => null);
      if (written && written.job.walletId === job.walletId && written.job.createdAt === job.createdAt) return { stored: true };
    } else if (kind === null) {
      return { stored: false, err, maybe }; // an answer, not an outage: trying again changes nothing
    }
    if (Date.now() + wait > until) return { stored: false, err, maybe };
    d.log.warn({ err, jobId: job.id, retryInMs: wait }, 'job document not written; retrying');
    await sleep(wait);
  }
}

/**
 * The tasks of a job whose document was not stored, taken back so no worker does work nobody paid
 * for. Best effort: a task left behind only costs its work (its outcome names no job and is dropped).
 */
async function withdrawTasks(nc: NatsConnection, seqs: number[]): Promise<void> {
  const jsm = await jsmOf(nc).catch(() => null);
  if (jsm) for (const seq of seqs) await jsm.streams.deleteMessage(STREAMS.tasks, seq, false).catch(() => {});
}

async function afterCommit(d: JobDeps, job: JobRecord, balance: number): Promise<{ job: JobRecord; balance: number }> {
  // From here the job exists and is charged. The operators' event is best effort and nothing
  // waits for it (publishJobEvent never throws).
  void publishJobEvent(d.nc, job, 'created');
  if (job.status !== 'queued') return { job, balance };
  // Not dispatched at creation: job.submitted asks the supervisor to. If this publish is lost too,
  // the supervisor's sweep picks up the queued job; refunding now would give away a job that will
  // still run.
  await publishSubmitted(d.js, job).catch((err) =>
    d.log.warn({ err, jobId: job.id }, 'job.submitted not published; the supervisor sweep will dispatch it'),
  );
  return { job, balance };
}
