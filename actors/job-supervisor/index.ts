// The job-supervisor actor: fans submitted jobs out into tasks, records outcomes, refunds what was
// not delivered, finishes jobs, turns exhausted tasks into worker_lost, deletes expired files.
// Decisions are in steps.ts; this file wires them to the streams, the advisory and the timers.
// Any number of instances may run: they share the durable consumers and every step is idempotent.
import { jetstream, jetstreamManager, AckPolicy, DeliverPolicy, type JsMsg } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Objm } from '@nats-io/obj';
import { nanos } from '@nats-io/nats-core';
import type { ActorContext, ActorHandle } from '../../shared/actor.ts';
import { BUCKETS, CONSUMERS, OBJECT_STORES, STREAMS, subjects } from '../../shared/names.ts';
import { addService, type RunningService } from '../../shared/micro.ts';
import { ApiError } from '../../shared/errors.ts';
import { isUnrefunded, type JobRecord, type JobSubmitted, type Outcome, type ResultRecord } from '../../shared/protocol/jobs.ts';
import { JOB_SUPERVISOR_API, type jobsApi } from '../../shared/protocol/job-supervisor.ts';
import type { RequestOf } from '../../shared/protocol/endpoint.ts';
import {
  dispatchJob,
  recordOutcome,
  failLostTask,
  purgeJob,
  settleJob,
  failStuckJob,
  failWorkerlessJob,
  objectsOfJobs,
  releaseDependents,
  type Deps,
} from './steps.ts';
import { archiveSettledJobs, forgetOldJobs } from './retire.ts';
import { readCatalogue } from '../../shared/catalogue.ts';
import { afterOutcome, releaseHeld } from './release.ts';
import { walletsWithHeld } from '../../shared/jobs/share.ts';
import { reportLostFile } from '../../shared/jobs/lost.ts';
import { SERVICES } from '../../shared/names.ts';
import { mergeOffers } from '../../shared/services/index.ts';
import { JobProjection } from './projection.ts';
import { endIfOrphaned } from './orphaned.ts';
import { startWebhookSender } from './webhooks.ts';
import { withRetry, sleep, within } from '../../shared/runtime.ts';
import { decodeJob, readJob } from '../../shared/jobs/store.ts';
import { readArchived } from '../../shared/jobs/archive.ts';
import { join } from 'node:path';

const shotsKind = (browser: string, version: string) => `shots:${browser}@${version}`;
/** The worker kind a result waits for: its browser version for shots (each pool serves only the browsers it launched), else its service. */
const kindOf = (job: Pick<JobRecord, 'service'>, r: ResultRecord) =>
  job.service === 'shots' && typeof r.params?.browser === 'string' && typeof r.params?.version === 'string'
    ? shotsKind(r.params.browser, r.params.version)
    : job.service;

/** The wallet's orphan sweep runs within this after a charge's grace ends (actors/wallet/orphans.ts: every grace/4, 1 to 30 s). */
const orphanSweepSlackMs = (graceMs: number) => Math.min(30_000, Math.max(1000, graceMs / 4)) + 5000;
/** How often a long-running job is asked about again (an orphan refund may come late while the wallet was down). */
const ORPHAN_RECHECK_MS = 10 * 60_000;

/** Every how many sweeps the stores are listed to find delivered results whose file is gone. */
const LOST_FILE_EVERY_SWEEPS = 10;

/** How many messages one instance works on at once, per consumer. */
const PARALLEL = 16;
/** How long one pull stays open: the longest a stop waits for the server to finish sending. */
const PULL_EXPIRES_MS = 1000; // the least nats.js allows; a stop step of main.ts has 1.5 s for the wallet and the supervisor
/** How long the start waits for its projection's tail before it answers anyway (the rest is caught up in the background). */
const START_CATCH_UP_WAIT_MS = 2000;
/** How long a progress line waits before it is written to the job document (see noteProgress). */
const PROGRESS_DELAY_MS = 250;

export async function start(ctx: ActorContext): Promise<ActorHandle> {
  const { nc, config, log } = ctx;
  const js = jetstream(nc);
  const jsm = await withRetry('JetStream', () => jetstreamManager(nc), { log });
  const kvm = new Kvm(nc);
  // every JetStream step of the start is retried: right after a cluster (re)start, streams and
  // consumers answer "temporarily unavailable" until they have leaders again
  const d: Deps = {
    nc,
    js,
    jsm,
    config,
    log,
    jobs: await withRetry('jobs bucket', () => kvm.open(BUCKETS.jobs), { log }),
    datasets: await withRetry('datasets bucket', () => kvm.open(BUCKETS.datasets), { log }),
    objm: new Objm(nc),
  };

  const webhooks = startWebhookSender(d, ctx.instanceId || `supervisor-${process.pid}`);
  d.webhooks = webhooks;

  // A file with its checkpoint: the start applies only the tail written since the last stop; a file
  // that cannot be trusted is rebuilt in the background (the list answers 503 meanwhile).
  const projection = new JobProjection({ dir: join(config.dataDir, 'job-supervisor'), keepMs: config.retention.jobRecords * 1000, log });
  await withRetry('job projection', () => projection.start(d.jobs, d.jsm), { log });
  // A short tail is applied before the first answer; a long one (a supervisor that was down while
  // others worked) is caught up in the background: the list and archived jobs answer 503 with
  // Retry-After meanwhile, as during a rebuild, and the rest of the actor works at once.
  if (projection.complete) await within(projection.caughtUp, START_CATCH_UP_WAIT_MS, undefined);
  log.info({ file: projection.file, ...projection.startedAs, applied: projection.appliedCount }, 'job projection opened');
  d.copyOf = (id) => projection.getStored(id);
  /** A job's document in the archive (shared/jobs/archive.ts), or null when it is not there. */
  const archivedDoc = async (id: string) => {
    const seq = await projection.archivedAt(id);
    return seq === null ? null : readArchived(d.jsm, seq, id);
  };
  /** The document: this instance's recent copy (a guess; every step re-reads what it writes), else the bucket, else the archive. */
  const docOf = async (id: string) => projection.getStored(id)?.job ?? (await readJob(d.jobs, id))?.job ?? (await archivedDoc(id));

  // Our own consumers: redeliver until handled (no max_deliver); a failed step naks with a delay.
  const consumerCfg = (durable: string, filter: string) => ({
    durable_name: durable,
    filter_subject: filter,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(30_000),
    max_ack_pending: 1000,
  });
  for (const [stream, cfg] of [
    [STREAMS.jobs, consumerCfg(CONSUMERS.supervisorJobs, subjects.jobsAll)],
    [STREAMS.results, consumerCfg(CONSUMERS.supervisorResults, subjects.resultsAll)],
    [STREAMS.lostTasks, consumerCfg(CONSUMERS.supervisorLost, subjects.advisoryMaxDeliveries(STREAMS.tasks, '*'))],
  ] as const) {
    await withRetry(
      `consumer ${cfg.durable_name}`,
      () =>
        jsm.consumers.add(stream, cfg).catch(async (e: Error) => {
          if (!/already in use|exists/i.test(e.message)) throw e;
          return jsm.consumers.update(stream, cfg.durable_name, cfg);
        }),
      { log },
    );
  }

  const inflight = new Set<Promise<void>>();
  let stopping = false;

  function run(m: JsMsg, what: string, step: () => Promise<void>) {
    const p = (async () => {
      try {
        await step();
        m.ack();
      } catch (err) {
        const retryIn = Math.min(30_000, 500 * 2 ** Math.min(6, m.info.deliveryCount));
        log.warn({ err, what, deliveries: m.info.deliveryCount, retryIn }, 'supervisor step failed; will retry');
        m.nak(retryIn);
      }
    })();
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
    return p;
  }

  /**
   * Pull and handle, at most PARALLEL messages in hand. Bounded pulls (fetch), not a standing
   * `consume()`: closing a consume subscription drops whatever the server sent it meanwhile, and the
   * server may still fill the pull it had open, so a stopping instance left messages to the 30 s ack
   * wait. A fetch ends on the server's word (its batch filled or its time up); a stop lets the open
   * one end and hands back what still comes in it.
   */
  async function pump(stream: string, durable: string, handle: (m: JsMsg) => Promise<void>): Promise<{ done: Promise<void> }> {
    const consumer = await withRetry(`consumer ${durable}`, () => js.consumers.get(stream, durable), { log });
    const slots = new Set<Promise<void>>();
    const done = (async () => {
      while (!stopping) {
        const room = PARALLEL - slots.size;
        if (room <= 0) {
          await Promise.race(slots);
          continue;
        }
        try {
          const batch = await consumer.fetch({ max_messages: room, expires: PULL_EXPIRES_MS });
          for await (const m of batch) {
            if (stopping) {
              // pulled, not handled: back for another instance once this pull has surely ended
              // (an immediate nak would come straight back into it)
              m.nak(PULL_EXPIRES_MS);
              continue;
            }
            const p = handle(m);
            slots.add(p);
            void p.finally(() => slots.delete(p));
          }
        } catch (err) {
          // a failover, a consumer without a leader yet: pull again shortly (a closed connection: done)
          if (stopping || nc.isClosed()) break;
          log.warn({ err, stream, durable }, 'pull failed; pulling again');
          await sleep(1000);
        }
      }
    })();
    return { done };
  }

  const jobsPump = await pump(STREAMS.jobs, CONSUMERS.supervisorJobs, (m) =>
    run(m, 'dispatch', () => dispatchJob(d, m.json<JobSubmitted>().jobId)),
  );
  // Progress is shown only while a result is pending: each line is written after a short delay,
  // the newest line per result, and not at all if the result finished meanwhile. A fast task's
  // progress then costs no write to the job document; a line lost in a crash is only a display.
  const progressDue = new Map<string, { o: Outcome; timer: NodeJS.Timeout }>();
  const noteProgress = (o: Outcome) => {
    const key = `${o.jobId}/${o.resultKey}`;
    const due = progressDue.get(key);
    if (due) {
      due.o = o;
      return;
    }
    const entry = {
      o,
      timer: setTimeout(() => {
        progressDue.delete(key);
        if (stopping) return;
        recordOutcome(d, entry.o).catch((err) => log.warn({ err, jobId: o.jobId }, 'progress not recorded'));
      }, PROGRESS_DELAY_MS),
    };
    entry.timer.unref();
    progressDue.set(key, entry);
  };
  // Progress lines come as core messages (shared/worker.ts), one instance of the group each.
  const progressSub = nc.subscribe(subjects.progressAll, {
    queue: CONSUMERS.supervisorResults,
    callback: (err, m) => {
      if (err || stopping) return;
      let o: Outcome;
      try {
        o = m.json<Outcome>();
      } catch {
        return; // not a line: nothing to show
      }
      if (o?.kind === 'progress' && typeof o.jobId === 'string' && typeof o.resultKey === 'string') noteProgress(o);
    },
  });
  // (a worker of an older version still sends its lines on RESULTS: handled the same way below)
  const resultsPump = await pump(STREAMS.results, CONSUMERS.supervisorResults, (m) => {
    let o: Outcome;
    try {
      o = m.json<Outcome>();
    } catch {
      return run(m, 'outcome', () => recordOutcome(d, m.json<Outcome>())); // unreadable: the usual failure path
    }
    if (o?.kind === 'progress') {
      noteProgress(o);
      m.ack();
      return Promise.resolve();
    }
    const due = progressDue.get(`${o.jobId}/${o.resultKey}`);
    if (due) {
      clearTimeout(due.timer);
      progressDue.delete(`${o.jobId}/${o.resultKey}`);
    }
    return run(m, 'outcome', async () => {
      await recordOutcome(d, o);
      // the wallet's share (release.ts): a failure here leaves the held tasks to the sweep
      await afterOutcome(d, o).catch((err) => log.warn({ err, jobId: o.jobId }, 'held tasks not released; the sweep will'));
    });
  });

  // Exhausted tasks: the server's advisory, stored in LOST_TASKS (shared/nats/provision.ts), so one
  // published while no supervisor listened is acted on when one comes back.
  const lostPump = await pump(STREAMS.lostTasks, CONSUMERS.supervisorLost, (m) => {
    let seq = 0;
    try {
      seq = Number(m.json<{ stream_seq?: number }>().stream_seq);
    } catch {
      /* not JSON */
    }
    if (!Number.isSafeInteger(seq) || seq <= 0) {
      log.error({ subject: m.subject, seq: m.seq }, 'unreadable max-deliveries advisory removed');
      m.term();
      return Promise.resolve();
    }
    return run(m, 'worker_lost', () => failLostTask(d, seq));
  });

  // Periodic backstop: lost job.submitted, half-settled jobs (crash between steps), stuck tasks, expiry.
  let sweeping: Promise<void> | null = null;
  const sweepMs = Math.max(200, config.retention.sweepSeconds * 1000);
  // A queued job not dispatched after this long lost its job.submitted (gateway died after the write).
  const staleQueuedMs = Math.min(30_000, 10 * sweepMs);
  // When each worker kind (a service; for shots a browser version) last had a live instance in the
  // catalogue, as this instance saw it (from its own start: a supervisor just started gives workers
  // the full noWorkerSeconds).
  const catalogueKv = await withRetry('catalogue bucket', () => kvm.open(BUCKETS.catalogue), { log });
  const startedAt = Date.now();
  const workerSeen = new Map<string, number>();
  /** Which kinds have had no live instance for noWorkerSeconds; null when the catalogue cannot be read (assume alive). */
  async function workerlessCheck(now: number): Promise<((kind: string) => boolean) | null> {
    const live = new Set<string>();
    try {
      for (const s of SERVICES) {
        const entries = await readCatalogue(catalogueKv, s);
        if (entries.length) live.add(s);
        if (s === 'shots') for (const b of mergeOffers(entries)) for (const v of b.versions) live.add(shotsKind(b.id, v));
      }
    } catch {
      return null;
    }
    for (const k of live) workerSeen.set(k, now);
    if (workerSeen.size > 10_000) for (const [k, at] of workerSeen) if (now - at > 24 * 3600_000) workerSeen.delete(k);
    return (kind) => !live.has(kind) && now - (workerSeen.get(kind) ?? startedAt) > config.jobs.noWorkerSeconds * 1000;
  }
  // Delivered results whose file is no longer in its store: one listing per store every few sweeps
  // (each lost file is reported; loseResult checks the store again before refunding).
  let sweeps = 0;
  async function findLostFiles(now: number) {
    const files = projection.keptFiles(now);
    // a finished job with a failed result not refunded (a lost file whose settle was cut short and
    // whose report was acked anyway by an older version): settled again here, found by an index
    for (const id of projection.unrefunded())
      await settleJob(d, id).catch((err) => log.warn({ err, id }, 'sweep: settle of a lost result failed'));
    const present = new Map<string, Set<string>>();
    for (const store of new Set(files.map((f) => f.store))) {
      const os = await d.objm.open(store);
      present.set(store, new Set((await os.list()).filter((o) => !o.deleted).map((o) => o.name)));
    }
    for (const f of files) {
      if (present.get(f.store)?.has(f.name)) continue;
      await reportLostFile(nc, f.jobId, f.key, "the stored file was not found by the supervisor's sweep").catch((err) =>
        log.warn({ err, jobId: f.jobId }, 'sweep: lost file not reported'),
      );
    }
  }
  // A job still running past its charge's orphan grace may have been written after its orphan
  // refund (issue 28 item 3, orphaned.ts): asked of the wallet then, and again every ORPHAN_RECHECK_MS.
  const orphanChecked = new Map<string, number>();
  async function orphanedNow(job: JobRecord, now: number): Promise<boolean> {
    const graceMs = config.wallet.orphanChargeGraceSeconds * 1000;
    if (job.createdAt > now - graceMs - orphanSweepSlackMs(graceMs)) return false;
    if (now - (orphanChecked.get(job.id) ?? 0) < ORPHAN_RECHECK_MS) return false;
    if (orphanChecked.size > 50_000) orphanChecked.clear();
    orphanChecked.set(job.id, now);
    return endIfOrphaned(d, job.id).catch((err) => {
      log.warn({ err, id: job.id }, 'sweep: orphan check failed');
      return false;
    });
  }
  async function sweep() {
    const now = Date.now();
    const workerless = await workerlessCheck(now);
    if (sweeps++ % LOST_FILE_EVERY_SWEEPS === 0)
      await findLostFiles(now).catch((err) => log.warn({ err }, 'sweep: lost-file check failed'));
    for (const id of projection.unfinished('queued', now - staleQueuedMs))
      await dispatchJob(d, id).catch((err) => log.warn({ err, id }, 'sweep: dispatch failed'));
    for (const w of await walletsWithHeld(jsm).catch(() => []))
      await releaseHeld(d, w).catch((err) => log.warn({ err, walletId: w }, 'sweep: release of held tasks failed'));
    const stuckBefore = now - config.jobs.stuckSeconds * 1000;
    for (const id of projection.unfinished('processing', now)) {
      // the projection's copy says which step is due; the step itself re-reads the bucket
      const job = await docOf(id).catch(() => null);
      if (!job) continue;
      if (await orphanedNow(job, now)) continue;
      // a page set's pages waiting or in flight are its pending results
      const pending = job.results.some((r) => r.status === 'pending') || /[-q]/.test(job.pageSet?.state ?? '');
      const unrefunded = job.results.some(isUnrefunded);
      // a result waiting for others whose release was cut short (a crash between the outcome and it)
      if (job.results.some((r) => r.status === 'pending' && r.after && !r.taskSeq))
        await releaseDependents(d, id).catch((err) => log.warn({ err, id }, 'sweep: release failed'));
      // a crawl steps on every sweep too: pages held by politeness or a Retry-After, lost tasks (crawl-send.ts)
      if (!pending || unrefunded || job.pageSet?.kind === 'crawl')
        await settleJob(d, id).catch((err) => log.warn({ err, id }, 'sweep: settle failed'));
      if (pending && (job.startedAt ?? now) <= stuckBefore)
        await failStuckJob(d, id).catch((err) => log.warn({ err, id }, 'sweep: stuck check failed'));
      else if (pending && workerless && job.results.some((r) => r.status === 'pending' && r.subject && workerless(kindOf(job, r)))) {
        await failWorkerlessJob(d, id, config.jobs.noWorkerSeconds, (r) => workerless(kindOf(job, r))).catch((err) =>
          log.warn({ err, id }, 'sweep: no-worker check failed'),
        );
      }
    }
    for (const id of projection.webhooksDue(Date.now())) webhooks.send(id);
    const expired = projection.expired(Date.now());
    if (expired.length) {
      const others = await objectsOfJobs(d, Object.values(OBJECT_STORES), expired).catch((err) => {
        log.warn({ err }, 'sweep: listing stored objects failed; deleting result files only');
        return new Map<string, { store: string; name: string }[]>();
      });
      for (const id of expired) await purgeJob(d, id, others.get(id)).catch((err) => log.warn({ err, id }, 'sweep: purge failed'));
    }
    const retiring = { d, projection, log, stopping: () => stopping };
    await forgetOldJobs(retiring, Date.now()).catch((err) => log.warn({ err }, 'sweep: job record retention failed'));
    await archiveSettledJobs(retiring, Date.now()).catch((err) => log.warn({ err }, 'sweep: archiving finished jobs failed'));
  }
  const timer = setInterval(() => {
    if (sweeping || stopping) return;
    sweeping = sweep()
      .catch((err) => log.warn({ err }, 'sweep failed'))
      .finally(() => {
        sweeping = null;
      });
  }, sweepMs);
  timer.unref();

  const service: RunningService = await addService(
    nc,
    {
      api: JOB_SUPERVISOR_API,
      version: '1.0.0',
      endpoints: {
        [subjects.jobs.list]: async (req: RequestOf<typeof jobsApi.list>) => {
          // a job created just before the list is in it; a list being rebuilt or behind answers 503
          await projection.sync();
          // the documents as the projection applied them (as fresh as a read of the bucket after the
          // sync); one it does not keep is read from the bucket, and one deleted meanwhile drops out
          const rows = projection.list(req.walletId, req.limit ?? 30);
          const jobs = await Promise.all(
            rows.map(async (r) => (r.doc !== null ? decodeJob(r.doc) : ((await readJob(d.jobs, r.id))?.job ?? (await archivedDoc(r.id))))),
          );
          return { jobs: jobs.filter((j): j is JobRecord => j !== null && j.walletId === req.walletId) };
        },
        [subjects.jobs.get]: async (req: RequestOf<typeof jobsApi.get>) => {
          // the gateway reads the bucket itself and asks here for a job it does not find there (archived)
          const job = (await readJob(d.jobs, req.jobId))?.job ?? (await archivedDoc(req.jobId));
          if (!job || job.walletId !== req.walletId) throw new ApiError('not_found', 'no such job');
          return { job };
        },
        [subjects.jobs.stats]: async () => {
          const { unfinished, oldest } = projection.unfinishedStats();
          const { mode, reason, from } = projection.startedAs;
          return {
            total: projection.count(),
            unfinished,
            oldestUnfinished: oldest,
            projection: {
              complete: projection.complete,
              catchingUp: projection.catchingUp,
              mode,
              ...(reason ? { reason } : {}),
              appliedAtStart: from,
              appliedSinceStart: projection.appliedCount,
            },
          };
        },
      },
    },
    log,
  );

  log.info({ instanceId: ctx.instanceId }, 'job-supervisor started');
  return {
    async stop() {
      // no new pull from here; the open ones end within PULL_EXPIRES_MS, what comes in them is handed back
      stopping = true;
      clearInterval(timer);
      progressSub.unsubscribe();
      for (const { timer: t } of progressDue.values()) clearTimeout(t);
      progressDue.clear();
      await service.stop().catch(() => {});
      const pumps = [jobsPump, resultsPump, lostPump];
      await Promise.allSettled([...pumps.map((p) => p.done), sweeping]);
      await Promise.allSettled([...inflight]);
      await webhooks.stop();
      await projection.stop();
    },
  };
}
