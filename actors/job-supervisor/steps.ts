import { STREAMS } from '../../shared/names.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { isFinished, isUnrefunded, type JobRecord, type Outcome, type ResultRecord, type Task } from '../../shared/protocol/jobs.ts';
import { publishOutcome } from '../../shared/worker.ts';
import { sleep } from '../../shared/runtime.ts';
import { markDispatched, publishRootTasks, taskOf } from '../../shared/jobs/dispatch.ts';
import { publishShared } from '../../shared/jobs/share.ts';
import { readJob, updateJob, refundedTotal, publishJobEvent, type StoredJob } from '../../shared/jobs/store.ts';
import { isDatasetFee, datasetUsers, releaseDatasetMark } from '../../shared/services/index.ts';
import { ApiError } from '../../shared/errors.ts';
import { endIfOrphaned } from './orphaned.ts';
import { failpoint } from '../../shared/failpoints.ts';
import { pageIndexOf } from '../../shared/jobs/pages.ts';
import { advancePageSet, failStuckPages, recordPage } from './pages.ts';

export type { Deps } from './deps.ts';
import type { Deps } from './deps.ts';

/**
 * Fan a job out: one task per result that needs work; results without work are done at once. The
 * gateway does this at creation; here it is the backstop for a job written `queued` because its
 * tasks could not be published then (job.submitted, or the sweep of stale queued jobs).
 */
export async function dispatchJob(d: Deps, jobId: string): Promise<void> {
  const cur = await readJob(d.jobs, jobId);
  if (!cur) {
    d.log.warn({ jobId }, 'job.submitted for a job that is not in the bucket; dropped');
    return;
  }
  if (cur.job.status !== 'queued') return;
  // written later than the gateway ever writes one: its charge may have been refunded as an orphan
  if (Date.now() - cur.job.createdAt > (d.config.wallet.orphanChargeGraceSeconds * 1000) / 2 && (await endIfOrphaned(d, jobId))) return;
  // the message id makes a repeated dispatch (redelivery, sweep, second instance) a no-op
  const pub = await publishRootTasks(d.js, d.jsm, d.config, cur.job);
  failpoint('supervisor.after-dispatch-tasks');
  const res = await updateJob(d.jobs, jobId, (j) => markDispatched(j, new Map([...pub.taken, ...pub.held])));
  if (res?.changed) await publishJobEvent(d.nc, res.job, 'processing');
  await settleJob(d, jobId);
}

/** How long an outcome whose job is not in the bucket waits for it before its redelivery is asked for. */
const UNKNOWN_JOB_RETRY_MS = 200;

/** Record a worker's outcome (or progress) on its result. */
export async function recordOutcome(d: Deps, o: Outcome): Promise<void> {
  // a page of a page set (websitepro `urls`): its results go to PAGES (pages.ts)
  if (pageIndexOf(o.resultKey) !== null) return recordPage(withFinish(d), o);
  if (o.kind === 'lost') return loseResult(d, o.jobId, o.resultKey, o.message);
  const record = (j: JobRecord) => {
    const r = j.results.find((x) => x.key === o.resultKey);
    if (!r || r.status !== 'pending') return false;
    if (o.kind === 'progress') {
      if (r.progress === o.progress) return false;
      r.progress = String(o.progress).slice(0, 500);
      return true;
    }
    delete r.progress;
    if (o.extra) r.extra = { ...r.extra, ...o.extra };
    if (o.kind === 'done') {
      r.status = 'done';
      if (o.file) r.file = o.file;
      // the last result delivered and nothing to refund: finish in this same write, the state
      // settleJob's last step would write next (one JetStream write fewer per job)
      if (j.status === 'processing' && j.results.every((x) => x.status === 'done')) finishInPlace(j);
    } else {
      r.status = 'failed';
      r.error = o.error;
      if (o.message) r.message = o.message;
    }
    return true;
  };
  // the outcome usually comes well after the document was written: the projection has it already
  let res = await updateJob(d.jobs, o.jobId, record, undefined, d.copyOf?.(o.jobId));
  if (!res) {
    // The gateway publishes a job's tasks just before it writes the document: an outcome can
    // arrive first. Retried (the step fails, the message comes back) for as long as the document
    // may still be written, the orphan grace of its charge; after that the job never existed.
    if (o.kind !== 'progress' && Date.now() - o.at < d.config.wallet.orphanChargeGraceSeconds * 1000) {
      // usually a few milliseconds behind: one quick look before the redelivery's longer delay
      await sleep(UNKNOWN_JOB_RETRY_MS);
      res = await updateJob(d.jobs, o.jobId, record);
      if (!res) throw new Error(`outcome for job ${o.jobId}, not (yet) in the bucket`);
    }
  }
  if (!res) {
    d.log.warn({ jobId: o.jobId, resultKey: o.resultKey }, 'outcome for an unknown job; dropped');
    return;
  }
  if (o.kind === 'progress') return;
  if (res.changed) failpoint('supervisor.after-outcome');
  if (res.changed && isFinished(res.job)) {
    // finished in the outcome's own write: every result done, so no dependent waits and nothing to settle
    await afterFinish(d, res.job);
    return;
  }
  // res.job is the record as of this write (or as read): with results still pending and none made
  // from others, neither step below has anything to do (settling waits for the last pending
  // result, whose own outcome settles), so their two reads are skipped
  const dependents = res.job.results.some((r) => r.after);
  if (dependents) await releaseDependents(d, o.jobId);
  // without dependents nothing was written since: the record as of this write is settle's guess
  // (its refund marks and the finish go out without a read each; a stale one is refused and read)
  // a failed result is refunded now, not when the job's last result is final (spec: each result is
  // refunded on its own); a redelivered outcome finds it still unrefunded and settles again
  const unrefunded = res.job.results.some(isUnrefunded);
  if (dependents || unrefunded || !res.job.results.some((r) => r.status === 'pending'))
    await settleJob(d, o.jobId, dependents ? null : { job: res.job, revision: res.revision });
}

/**
 * Results made from other results (shots compare): publish the task of each one whose inputs are all
 * done, naming the stored files; fail (and so refund) each one with an input that failed. Idempotent:
 * the task's message id dedupes a repeat, the failure goes through the one outcome path.
 */
export async function releaseDependents(d: Deps, jobId: string): Promise<void> {
  const job = (await readJob(d.jobs, jobId))?.job;
  if (!job || job.status !== 'processing') return;
  const byKey = new Map(job.results.map((r) => [r.key, r]));
  const seqs = new Map<string, number>();
  for (const r of job.results) {
    if (r.status !== 'pending' || !r.after || !r.subject || r.taskSeq) continue;
    const inputs = r.after.map((k) => byKey.get(k));
    const failed = inputs.find((x) => !x || x.status === 'failed' || (x.status === 'done' && !x.file));
    if (failed) {
      await publishOutcome(
        d.nc,
        {
          v: 1,
          kind: 'failed',
          jobId,
          resultKey: r.key,
          at: Date.now(),
          error: 'not_delivered',
          message: `the screenshot ${failed?.key ?? '?'} it compares was not delivered`,
        },
        'supervisor',
      );
      continue;
    }
    if (inputs.some((x) => x!.status !== 'done')) continue;
    const task = taskOf(job, r, {
      ...(r.params ?? {}),
      inputs: inputs.map((x) => ({ key: x!.key, store: x!.file!.store, name: x!.file!.name })),
    });
    // through the wallet's share, as the job's first tasks (held past it: released by release.ts)
    const pub = await publishShared(d.js, d.jsm, d.config, job.walletId, [{ kind: r.subject, task }]);
    for (const [k, seq] of [...pub.taken, ...pub.held]) seqs.set(k, seq);
  }
  if (!seqs.size) return;
  await updateJob(d.jobs, jobId, (j) => {
    let changed = false;
    for (const r of j.results) {
      if (r.status === 'pending' && seqs.has(r.key) && !r.taskSeq) {
        r.taskSeq = seqs.get(r.key);
        changed = true;
      }
    }
    return changed;
  });
}

/** The results a result without work is paid for: the dataset's users for the fee, else every result with work. */
const servedResults = (job: Pick<JobRecord, 'results'>, r: ResultRecord) =>
  isDatasetFee(r) ? datasetUsers(job) : job.results.filter((x) => x.subject);

const firstError = (job: Pick<JobRecord, 'results'>) => {
  const errs = job.results.filter((r) => r.status === 'failed' && r.error && r.subject).map((r) => r.error!);
  return errs[0] ?? job.results.find((r) => r.error)?.error;
};

/**
 * Once no result is pending: fail the work-less results if no task delivered anything (a job that
 * delivered nothing charges nothing), refund every failed result exactly once, then finish the job.
 */
export async function settleJob(d: Deps, jobId: string, known?: StoredJob | null): Promise<void> {
  // `known`: the record as the caller just wrote or read it. Its decisions here are those a read
  // would have made a moment earlier; every write below carries the revision it was decided on
  // (a guess, shared/jobs/store.ts updateJob), so a stale copy is refused and decided again on a
  // fresh read, and a refund repeated on a stale copy is one ledger entry (idempotent per result).
  let guess = known ?? (await readJob(d.jobs, jobId));
  let cur = guess?.job;
  if (!cur || cur.status === 'queued') return;
  if (cur.pageSet) return void (await advancePageSet(withFinish(d), jobId));
  // a finished job is settled again only when a delivered result was lost since (loseResult)
  if (isFinished(cur) && !cur.results.some(isUnrefunded)) return;
  // Results still pending: only the failed ones are settled now (refunded and marked), the job
  // is finished by the settle after its last outcome.
  const pending = cur.results.some((r) => r.status === 'pending');
  if (pending && !cur.results.some(isUnrefunded)) return;

  // A result without work (the dataset fee) is kept only if a result it served was delivered:
  // otherwise it fails and is refunded below, and the wallet's dataset mark is given back.
  const unused = pending
    ? []
    : cur.results.filter((r) => !r.subject && r.status === 'done' && !servedResults(cur!, r).some((x) => x.status === 'done'));
  if (unused.length) {
    const res = await updateJob(
      d.jobs,
      jobId,
      (j) => {
        let changed = false;
        for (const r of j.results) {
          if (r.subject || r.status !== 'done' || servedResults(j, r).some((x) => x.status === 'done')) continue;
          const served = servedResults(j, r);
          r.status = 'failed';
          r.error = firstError({ results: served }) ?? firstError(j) ?? 'not_delivered';
          r.message = isDatasetFee(r)
            ? 'no result that needed the test dataset was delivered, so this fee is refunded'
            : 'nothing else of the job was delivered, so this fee is refunded';
          changed = true;
        }
        return changed;
      },
      undefined,
      guess,
    );
    cur = res?.job ?? cur;
    guess = res ? { job: res.job, revision: res.revision } : null;
  }

  // Every failed result is refunded first, then marked refunded in the finish's own write: one
  // job-document write (and one watch delivery to every reader) fewer per refunded job, so the
  // long poll's answer comes a write sooner. A crash between the refunds and that write leaves
  // failed results unmarked: the sweep settles the job again and the repeated refunds are the
  // same ledger entries (idempotent per result), as a crash between a refund and its own mark was.
  const refundedNow = new Set<string>();
  for (const r of cur.results) {
    if (r.status !== 'failed' || r.refunded) continue;
    if (r.price > 0) {
      try {
        await wallet.refund(d.nc, { walletId: cur.walletId, jobId, resultKey: r.key, amount: r.price });
        failpoint('supervisor.after-result-refund');
      } catch (e) {
        // more than was charged: the charge was given back whole before this document was written
        if (e instanceof ApiError && e.code === 'bad_request' && (await endIfOrphaned(d, jobId))) return;
        throw e;
      }
    }
    refundedNow.add(r.key);
  }

  // after the refund, so a job claiming the mark next never overlaps a fee not yet given back;
  // before the job is finished, so a crash in between is repaired by the sweep's next settle
  const fee = cur.results.find(isDatasetFee);
  if (!pending && fee?.status === 'failed') {
    await releaseDatasetMark(d.datasets, cur.walletId, jobId);
    failpoint('supervisor.after-dataset-release');
  }

  let finished = false;
  const res = await updateJob(
    d.jobs,
    jobId,
    (j) => {
      finished = false;
      let marked = false;
      for (const x of j.results) {
        if (refundedNow.has(x.key) && isUnrefunded(x)) {
          x.refunded = true;
          marked = true;
        }
      }
      if (marked) j.refunded = refundedTotal(j);
      // a result failed since the read (refunded by that outcome's own settle): marks only
      if (j.results.some((r) => r.status === 'pending' || isUnrefunded(r))) return marked;
      const status = j.results.some((r) => r.status === 'done') ? 'completed' : 'failed';
      if (isFinished(j) && j.status === status && j.refunded === refundedTotal(j)) return marked;
      finishInPlace(j);
      finished = true;
      return true;
    },
    undefined,
    guess,
  );
  if (res?.changed) failpoint(finished ? 'supervisor.after-settle' : 'supervisor.after-refund-mark');
  // the event and the webhook follow a finish (or a finished job's new status), not a mark alone
  if (res?.changed && finished) await afterFinish(d, res.job);
}

/** The finish of a job with nothing pending or left to refund, in the record about to be written. */
function finishInPlace(j: JobRecord) {
  const delivered = j.results.some((r) => r.status === 'done');
  j.status = delivered ? 'completed' : 'failed';
  j.finishedAt ??= Date.now();
  j.refunded = refundedTotal(j);
  if (!delivered) j.error = firstError(j) ?? 'failed';
  // in the same write as the finish, so a supervisor that dies now leaves it to the sweep
  if (j.webhook?.state === 'waiting') {
    j.webhook.state = 'pending';
    j.webhook.nextAt = j.finishedAt;
  }
}

const withFinish = (d: Deps): Deps => (d.afterFinish ? d : { ...d, afterFinish: (job) => afterFinish(d, job) });

/** Once the finish is written: the operators' event and the webhook. */
async function afterFinish(d: Deps, job: JobRecord) {
  await publishJobEvent(d.nc, job, job.status);
  if (job.webhook?.state === 'pending') d.webhooks?.send(job.id);
}

/**
 * A delivered result whose stored file is gone: checked in the store here (a report is only a
 * hint), then failed as worker_lost and refunded once through settleJob, like any failed result.
 * A job whose every result is lost becomes `failed` (nothing delivered, nothing charged); a
 * dataset fee whose only user was lost is refunded too. Files deleted by expiry are not lost.
 */
export async function loseResult(d: Deps, jobId: string, resultKey: string, message?: string): Promise<void> {
  const cur = (await readJob(d.jobs, jobId))?.job;
  const r = cur?.results.find((x) => x.key === resultKey);
  if (!cur || !r) return;
  // failed by an earlier delivery of this report whose settle did not get through (the wallet not
  // answering, a crash): settled now, so the message is acked only once the money is back
  if (isUnrefunded(r)) return settleJob(d, jobId);
  if (r.status !== 'done' || !r.file) return;
  if (cur.purgedAt !== undefined || Date.now() >= cur.expiresAt) return;
  const os = await d.objm.open(r.file.store);
  const info = await os.info(r.file.name); // a store failure throws: the report is retried, not acted on
  if (info && !info.deleted) {
    d.log.warn({ jobId, resultKey }, 'a result reported lost is in its store; nothing done');
    return;
  }
  const res = await updateJob(d.jobs, jobId, (j) => {
    const x = j.results.find((y) => y.key === resultKey);
    if (!x || x.status !== 'done' || !x.file || j.purgedAt !== undefined) return false;
    x.status = 'failed';
    x.error = 'worker_lost';
    x.message = (message ?? 'the stored file of this result was lost') + '; the result is refunded';
    delete x.file;
    return true;
  });
  if (res?.changed) {
    d.log.error({ jobId, resultKey, walletId: cur.walletId }, 'a delivered result lost its stored file; refunding it');
    failpoint('supervisor.after-lost-file');
  }
  await settleJob(d, jobId);
}

/** A task whose deliveries are exhausted: its worker kept dying. Fail it as worker_lost and remove it. */
export async function failLostTask(d: Deps, streamSeq: number): Promise<void> {
  const gone = (e: unknown) => /no message found|not found/i.test((e as Error).message);
  let task: Task | undefined;
  try {
    const sm = await d.jsm.streams.getMessage(STREAMS.tasks, { seq: streamSeq });
    if (!sm) return;
    task = sm.json<Task>();
  } catch (e) {
    if (gone(e)) return; // already handled
    if (!(e instanceof SyntaxError)) throw e;
  }
  if (task?.jobId && task.resultKey) {
    await failTask(
      d,
      task.jobId,
      task.resultKey,
      `the task was delivered ${d.config.jobs.maxDeliver} times and its worker never finished it`,
    );
  } else {
    d.log.error({ seq: streamSeq }, 'exhausted task is unreadable; removed without an outcome');
  }
  // the advisory is acked only after this: a task left in TASKS would count against limits.queueMax
  await d.jsm.streams.deleteMessage(STREAMS.tasks, streamSeq, false).catch((e: unknown) => {
    if (!gone(e)) throw e;
  });
}

/**
 * Report worker_lost through the RESULTS stream like any outcome, so it takes the one recording
 * path; the outcome message id makes it lose against a real outcome that got there first.
 */
export async function failTask(d: Deps, jobId: string, resultKey: string, message: string): Promise<void> {
  await publishOutcome(d.nc, { v: 1, kind: 'failed', jobId, resultKey, at: Date.now(), error: 'worker_lost', message }, 'supervisor');
}

/**
 * Every object under `<jobId>/` in the given stores, for the given jobs: the result files and
 * whatever else a worker kept for the job (e.g. the converter's per-job index). One listing per
 * store per sweep.
 */
export async function objectsOfJobs(d: Deps, stores: string[], jobIds: string[]): Promise<Map<string, { store: string; name: string }[]>> {
  const want = new Set(jobIds);
  const out = new Map<string, { store: string; name: string }[]>();
  if (!want.size) return out;
  for (const store of stores) {
    const os = await d.objm.open(store);
    for (const info of await os.list()) {
      if (info.deleted) continue;
      const jobId = info.name.split('/')[0]!;
      if (!want.has(jobId)) continue;
      (out.get(jobId) ?? out.set(jobId, []).get(jobId)!).push({ store, name: info.name });
    }
  }
  return out;
}

/** Delete a job's stored files after expiresAt and mark it purged. */
export async function purgeJob(d: Deps, jobId: string, others: { store: string; name: string }[] = []): Promise<void> {
  const cur = (await readJob(d.jobs, jobId))?.job;
  if (!cur || cur.purgedAt !== undefined || Date.now() < cur.expiresAt) return;
  const targets = [...others];
  for (const r of cur.results) {
    if (!r.file) continue;
    for (const name of [r.file.name, r.file.thumb?.name]) if (name) targets.push({ store: r.file.store, name });
  }
  for (const { store, name } of targets) {
    const os = await d.objm.open(store);
    await os.delete(name).catch((e: Error) => {
      if (!/not found/i.test(e.message)) throw e;
    });
  }
  const res = await updateJob(d.jobs, jobId, (j) => {
    if (j.purgedAt !== undefined) return false;
    j.purgedAt = Date.now();
    return true;
  });
  if (res?.changed) await publishJobEvent(d.nc, res.job, 'purged');
}

/**
 * A job whose service has had no live worker instance for jobs.noWorkerSeconds: its pending results
 * fail as worker_lost (refunded) now, not after jobs.stuckSeconds. Their tasks are removed first, so
 * a worker that comes back does not do work already refunded (a late real outcome still loses
 * against the worker_lost outcome id).
 */
export async function failWorkerlessJob(
  d: Deps,
  jobId: string,
  goneSeconds: number,
  gone: (r: ResultRecord) => boolean = () => true,
): Promise<void> {
  const cur = (await readJob(d.jobs, jobId))?.job;
  if (!cur || cur.status !== 'processing') return;
  for (const r of cur.results) {
    if (r.status !== 'pending' || !r.subject || !gone(r)) continue;
    d.log.warn({ jobId, resultKey: r.key, service: cur.service }, 'no worker for this result is running; failing as worker_lost');
    if (r.taskSeq) await d.jsm.streams.deleteMessage(STREAMS.tasks, r.taskSeq, false).catch(() => {});
    await failTask(d, jobId, r.key, `no ${cur.service} worker for this result has been running for ${goneSeconds} s`);
  }
}

/** Backstop for a job stuck with pending results long after its tasks went out. */
export async function failStuckJob(d: Deps, jobId: string): Promise<void> {
  const cur = (await readJob(d.jobs, jobId))?.job;
  if (!cur || cur.status !== 'processing' || !cur.startedAt) return;
  if (Date.now() - cur.startedAt < d.config.jobs.stuckSeconds * 1000) return;
  if (cur.pageSet) return failStuckPages(d, cur, (key, message) => failTask(d, jobId, key, message));
  for (const r of cur.results) {
    if (r.status !== 'pending') continue;
    d.log.warn({ jobId, resultKey: r.key }, 'result stuck past jobs.stuckSeconds; failing as worker_lost');
    if (r.taskSeq) await d.jsm.streams.deleteMessage(STREAMS.tasks, r.taskSeq, false).catch(() => {});
    await failTask(d, jobId, r.key, `no worker finished the task within ${d.config.jobs.stuckSeconds} s`);
  }
}
