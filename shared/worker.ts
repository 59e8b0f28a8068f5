// The worker side of the protocol in shared/protocol/jobs.ts: pull tasks from a durable consumer on
// the TASKS stream, heartbeat while working (msg.working()), store nothing itself, report the
// outcome on `result.<jobId>` and only then ack. A crash before the ack means redelivery; the
// supervisor turns an exhausted task into `worker_lost`.
import { jetstream, jetstreamManager, AckPolicy, DeliverPolicy, type JsMsg } from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/nats-core';
import { STREAMS, subjects } from './names.ts';
import { outcomeMsgId, TaskFailure, type Outcome, type StoredFile, type Task } from './protocol/jobs.ts';
import type { Config } from './config/index.ts';
import type { Logger } from './log.ts';

export interface TaskContext {
  task: Task;
  /** Report human-readable progress (also heartbeats). */
  progress(text: string): Promise<void>;
  /** Aborted when the worker stops; long work should give up. */
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
}

export async function publishOutcome(nc: NatsConnection, o: Outcome): Promise<void> {
  const js = jetstream(nc);
  await js.publish(subjects.result(o.jobId), JSON.stringify(o), o.kind === 'progress' ? undefined : { msgID: outcomeMsgId(o.jobId, o.resultKey) });
}

export async function ensureTaskConsumer(nc: NatsConnection, config: Config, consumer: string, filterSubject: string) {
  const jsm = await jetstreamManager(nc);
  const cfg = {
    durable_name: consumer,
    filter_subject: filterSubject,
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

export async function runWorker(opts: WorkerOptions): Promise<{ stop(): Promise<void> }> {
  const { nc, config, log } = opts;
  await ensureTaskConsumer(nc, config, opts.consumer, opts.filterSubject);
  const js = jetstream(nc);
  const consumer = await js.consumers.get(STREAMS.tasks, opts.consumer);
  const abort = new AbortController();
  let running = 0;
  const idle: (() => void)[] = [];
  const heartbeatMs = Math.max(500, (config.jobs.ackWaitSeconds * 1000) / 3);

  async function work(m: JsMsg) {
    const task = m.json<Task>();
    const hb = setInterval(() => m.working(), heartbeatMs);
    const ctx: TaskContext = {
      task,
      signal: abort.signal,
      deliveryCount: m.info.deliveryCount,
      progress: async (text) => {
        m.working();
        await publishOutcome(nc, { v: 1, kind: 'progress', jobId: task.jobId, resultKey: task.resultKey, at: Date.now(), progress: text }).catch(() => {});
      },
    };
    try {
      const r = await opts.handle(ctx);
      await publishOutcome(nc, { v: 1, kind: 'done', jobId: task.jobId, resultKey: task.resultKey, at: Date.now(), ...(r.file ? { file: r.file } : {}), ...(r.extra ? { extra: r.extra } : {}) });
      m.ack();
    } catch (e) {
      if (abort.signal.aborted) {
        // stopping: let another instance take it right away
        m.nak();
      } else if (e instanceof TaskFailure) {
        await publishOutcome(nc, { v: 1, kind: 'failed', jobId: task.jobId, resultKey: task.resultKey, at: Date.now(), error: e.error, message: e.message, ...(e.extra ? { extra: e.extra } : {}) });
        m.ack();
      } else {
        log.error({ err: e, jobId: task.jobId, resultKey: task.resultKey }, 'task crashed; will be redelivered');
        m.nak(1000 * m.info.deliveryCount);
      }
    } finally {
      clearInterval(hb);
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
        m = await consumer.next({ expires: 5000 });
      } catch (e) {
        if (abort.signal.aborted) break;
        log.warn({ err: e }, 'pull failed; retrying');
        await new Promise((r) => setTimeout(r, 1000));
        continue;
      }
      if (!m) continue;
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
      while (running > 0 && Date.now() - t0 < 10000) await new Promise((r) => setTimeout(r, 50));
    },
  };
}
