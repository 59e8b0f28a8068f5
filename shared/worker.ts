// The worker side of the protocol in shared/protocol/jobs.ts: pull tasks from a durable consumer on
// the TASKS stream, heartbeat while working (msg.working()), store nothing itself, report the
// outcome on `result.<jobId>` and only then ack. A crash before the ack means redelivery; the
// supervisor turns an exhausted task into `worker_lost`.
import { jetstreamManager, AckPolicy, DeliverPolicy, type JsMsg } from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/nats-core';
import { STREAMS, subjects } from './names.ts';
import { outcomeMsgId, thumbName, TaskFailure, type Outcome, type StoredFile, type Task } from './protocol/jobs.ts';
import type { Config } from './config/index.ts';
import type { Logger } from './log.ts';
import { withRetry, sleep } from './runtime.ts';
import { isTransientNatsError } from './nats/transient.ts';
import { putObject } from './nats/objects.ts';
import { jetstreamOf } from './nats/clients.ts';

export interface TaskContext {
  task: Task;
  /** Report human-readable progress (also heartbeats). */
  progress(text: string): Promise<void>;
  /** Aborted when the worker stops or the task passes its time bound; long work should give up. */
  signal: AbortSignal;
  deliveryCount: number;
}

export type TaskResult = { file?: StoredFile; extra?: Record<string, unknown> };

export interface WorkerOptions {
  nc: NatsConnection;
  config: Config;
  log: Logger;
  consumer: string;
  filterSubject: string;
  concurrency: number;
  handle: (ctx: TaskContext) => Promise<TaskResult>;
  /** Hard bound of one task (default `jobs.taskTimeoutSeconds`); then it fails as `timeout`. */
  taskTimeoutMs?: number;
}

/** Final outcomes carry the message id `outcome:<jobId>:<key>`: a repeat (redelivery, worker_lost race) is dropped by the stream. */
/**
 * `source` separates final outcomes of different origins in the RESULTS dedupe window: a worker's
 * retry of its own outcome is a duplicate, but the supervisor's `worker_lost` backstop must never be
 * swallowed by an earlier outcome that got lost. The supervisor keeps the first final outcome.
 */
export async function publishOutcome(nc: NatsConnection, o: Outcome, source = 'worker'): Promise<void> {
  if (o.kind === 'progress') return publishProgress(nc, o);
  const msgID = source === 'worker' ? outcomeMsgId(o.jobId, o.resultKey) : `${outcomeMsgId(o.jobId, o.resultKey)}:${source}`;
  await jetstreamOf(nc).publish(subjects.result(o.jobId), JSON.stringify(o), { msgID });
}

/**
 * A progress line is a core NATS message on `progress.<jobId>`, not stored and not acknowledged:
 * the worker does not wait for a disk write to say what it is doing, and the supervisor folds the
 * newest line into the job document only while the result is still pending.
 */
export function publishProgress(nc: NatsConnection, o: Extract<Outcome, { kind: 'progress' }>): void {
  nc.publish(subjects.progress(o.jobId), JSON.stringify(o));
}

/**
 * Store a result's file under the task's object name in the task's store and describe it for the
 * outcome. Writing again (a redelivered task) replaces the object.
 */
export async function storeResultFile(
  nc: NatsConnection,
  task: Task,
  data: Uint8Array,
  meta: { contentType: string; filename: string },
): Promise<StoredFile> {
  await putObject(nc, task.store, { name: task.objectName, description: meta.contentType }, data);
  return { store: task.store, name: task.objectName, contentType: meta.contentType, bytes: data.byteLength, filename: meta.filename };
}

/** Store a thumbnail beside the result file (shots); add the answer to the StoredFile as `thumb`. */
export async function storeThumb(
  nc: NatsConnection,
  task: Task,
  data: Uint8Array,
  contentType = 'image/webp',
): Promise<NonNullable<StoredFile['thumb']>> {
  const name = thumbName(task.jobId, task.resultKey);
  await putObject(nc, task.store, { name, description: contentType }, data);
  return { name, contentType, bytes: data.byteLength };
}

export async function ensureTaskConsumer(nc: NatsConnection, config: Config, consumer: string, filterSubject: string) {
  const jsm = await jetstreamManager(nc);
  // the kind's tasks of every wallet (`task.w.*.<kind>`) and on the kind subject itself (tasks
  // published before subjects carried the wallet); an existing consumer's single filter is replaced
  const cfg = {
    durable_name: consumer,
    filter_subject: undefined,
    filter_subjects: subjects.taskFilters(filterSubject),
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(config.jobs.ackWaitSeconds * 1000),
    max_deliver: config.jobs.maxDeliver,
    max_ack_pending: 1000,
  };
  try {
    await jsm.consumers.add(STREAMS.tasks, cfg);
  } catch (e) {
    // an existing consumer with other limits: bring it in line
    if (!/already in use|exists/i.test((e as Error).message)) throw e;
    await jsm.consumers.update(STREAMS.tasks, consumer, cfg);
  }
}

/** How long a stopping worker waits for its running tasks to give up after their abort. */
const STOP_GRACE_MS = 10_000;

/** How long a worker keeps trying to report a finished task through a NATS failover. */
const OUTCOME_RETRY_MS = 15_000;

/**
 * Publish a task's final outcome, trying again through a failover (the task's heartbeat keeps it
 * from being redelivered meanwhile): the work is done and its file stored, so a few seconds of
 * retries are cheaper than doing it again, and a failover must not use up the task's deliveries
 * until it fails as worker_lost. The fixed message id makes a retry that crosses a stored first try
 * a duplicate.
 */
function publishFinalOutcome(nc: NatsConnection, o: Outcome, stopping: AbortSignal, log: Logger): Promise<void> {
  return withRetry(`outcome of ${o.jobId}/${o.resultKey}`, () => publishOutcome(nc, o), {
    timeoutMs: OUTCOME_RETRY_MS,
    log,
    retryIf: (e) => isTransientNatsError(e) && !stopping.aborted,
  });
}

export async function runWorker(opts: WorkerOptions): Promise<{ stop(): Promise<void> }> {
  const { nc, config, log } = opts;
  // right after a cluster (re)start a consumer may have no leader yet for a few seconds
  const js = jetstreamOf(nc);
  const consumer = await withRetry(
    'task consumer',
    async () => {
      await ensureTaskConsumer(nc, config, opts.consumer, opts.filterSubject);
      return js.consumers.get(STREAMS.tasks, opts.consumer);
    },
    { log },
  );
  const abort = new AbortController();
  let running = 0;
  const idle: (() => void)[] = [];
  /** Tasks being worked on, with how to hand each back if it is still running when the worker stops. */
  const inHand = new Map<JsMsg, () => void>();
  const heartbeatMs = Math.max(500, (config.jobs.ackWaitSeconds * 1000) / 3);

  async function work(m: JsMsg) {
    let task: Task;
    try {
      task = m.json<Task>();
      if (task?.v !== 1 || !task.jobId || !task.resultKey) throw new Error('not a v1 task');
    } catch (e) {
      log.error({ err: e, subject: m.subject, seq: m.seq }, 'unreadable task removed');
      m.term();
      return;
    }
    const hb = setInterval(() => m.working(), heartbeatMs);
    let handedBack = false;
    inHand.set(m, () => {
      handedBack = true;
      clearInterval(hb);
      m.nak();
    });
    // every task is bounded, whatever the handler does: a handler that hangs while the heartbeat
    // keeps the message alive would otherwise hold the job (and its charge) forever
    const taskAbort = new AbortController();
    const onStop = () => taskAbort.abort();
    abort.signal.addEventListener('abort', onStop, { once: true });
    const limitMs = opts.taskTimeoutMs ?? config.jobs.taskTimeoutSeconds * 1000;
    let deadline: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      deadline = setTimeout(() => {
        taskAbort.abort();
        reject(new TaskFailure('timeout', `the task did not finish within ${Math.round(limitMs / 1000)} s`));
      }, limitMs);
    });
    timedOut.catch(() => {
      /* raced below; never unhandled */
    });
    const ctx: TaskContext = {
      task,
      signal: taskAbort.signal,
      deliveryCount: m.info.deliveryCount,
      progress: async (text) => {
        m.working();
        await publishOutcome(nc, {
          v: 1,
          kind: 'progress',
          jobId: task.jobId,
          resultKey: task.resultKey,
          at: Date.now(),
          progress: text,
        }).catch(() => {});
      },
    };
    try {
      let outcome: Outcome;
      try {
        const r = await Promise.race([opts.handle(ctx), timedOut]);
        outcome = {
          v: 1,
          kind: 'done',
          jobId: task.jobId,
          resultKey: task.resultKey,
          at: Date.now(),
          taskSeq: m.seq,
          ...(r.file ? { file: r.file } : {}),
          ...(r.extra ? { extra: r.extra } : {}),
        };
      } catch (e) {
        if (!(e instanceof TaskFailure) || abort.signal.aborted) throw e;
        outcome = {
          v: 1,
          kind: 'failed',
          jobId: task.jobId,
          resultKey: task.resultKey,
          at: Date.now(),
          error: e.error,
          message: e.message,
          taskSeq: m.seq,
          ...(e.extra ? { extra: e.extra } : {}),
        };
      }
      // outcome first, ack second: a crash in between means a redelivery, never a lost result
      await publishFinalOutcome(nc, outcome, abort.signal, log);
      if (!handedBack) m.ack();
    } catch (e) {
      if (handedBack) {
        // already given back by stop(): another instance has it
      } else if (abort.signal.aborted) {
        // stopping: let another instance take it right away
        m.nak();
      } else {
        log.error(
          { err: e, jobId: task.jobId, resultKey: task.resultKey, delivery: m.info.deliveryCount },
          'task crashed; will be redelivered',
        );
        m.nak(1000 * m.info.deliveryCount);
      }
    } finally {
      inHand.delete(m);
      clearInterval(hb);
      clearTimeout(deadline);
      abort.signal.removeEventListener('abort', onStop);
    }
  }

  const loop = (async () => {
    while (!abort.signal.aborted) {
      if (running >= opts.concurrency) {
        await new Promise<void>((r) => idle.push(r));
        continue;
      }
      let m: JsMsg | null = null;
      try {
        // short pulls: a stopping worker waits at most this long, and holds no buffered task
        m = await consumer.next({ expires: 1000 });
      } catch (e) {
        if (abort.signal.aborted) break;
        log.warn({ err: e }, 'pull failed; retrying');
        await sleep(1000);
        continue;
      }
      if (!m) continue;
      if (abort.signal.aborted) {
        // arrived while stopping: hand it straight back
        m.nak();
        break;
      }
      running++;
      void work(m).finally(() => {
        running--;
        idle.shift()?.();
      });
    }
  })();

  return {
    async stop() {
      abort.abort();
      idle.splice(0).forEach((r) => r());
      await loop;
      const t0 = Date.now();
      while (running > 0 && Date.now() - t0 < STOP_GRACE_MS) await sleep(50);
      // A handler that ignored the abort: its task goes back to the consumer now, and its heartbeat
      // stops, so another instance takes it at once instead of after ack_wait (or never, while this
      // process lives on and the heartbeat keeps the task). A late outcome from it is a duplicate.
      for (const handBack of inHand.values()) handBack();
      inHand.clear();
    },
  };
}
