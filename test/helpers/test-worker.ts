// A worker for the tests that speaks the documented protocol (docs/worker-protocol.md) through
// shared/worker.ts, like every real worker: pulls tasks, heartbeats, stores a real file in the
// object store, publishes the outcome, acks. What it does with a task is read from the task:
// `params.behave`, or the target URL's query (`?behave=fail` or `?behave.<resultKey>=fail`).
//   succeed     store a file and report done (default)
//   fail        report a clean failure (TaskFailure, error `params.error` or `unreachable`)
//   crash       throw every time: redelivered until deliveries are exhausted → worker_lost
//   crash-once  throw on the first delivery, succeed on the next
//   hang        never finish (heartbeats keep the task alive) until the worker stops or dies
//   hang-once   hang on the first delivery (kill the worker then), succeed on the next
//   progress    report three progress texts (`params.ms` apart, default 300 ms), then succeed
//   slow        wait `params.ms` (default 1000) then succeed
// Run as a script it is a separate process the tests can SIGKILL mid-task:
//   node --import tsx test/helpers/test-worker.ts <natsUrl> <consumer> <filterSubject> [ackWaitSeconds] [maxDeliver]
// It prints `ready` when pulling and `working <jobId> <resultKey> <delivery>` when a task starts.
import { pathToFileURL } from 'node:url';
import sharp from 'sharp';
import type { NatsConnection } from '@nats-io/nats-core';
import { runWorker, storeResultFile, storeThumb, type TaskContext } from '../../shared/worker.ts';
import { TaskFailure, type Task } from '../../shared/protocol/jobs.ts';
import type { Config } from '../../shared/config/index.ts';
import type { Logger } from '../../shared/log.ts';

export type Behaviour = 'succeed' | 'fail' | 'crash' | 'crash-once' | 'hang' | 'hang-once' | 'progress' | 'slow';

export function behaviourOf(task: Task): Behaviour {
  const p = task.params;
  if (typeof p.behave === 'string') return p.behave as Behaviour;
  // the page of a websitepro or shots task, the relay of a labs task
  const target = typeof p.url === 'string' ? p.url : p.relay;
  if (typeof target === 'string') {
    try {
      const q = new URL(target).searchParams;
      const b = q.get(`behave.${task.resultKey}`) ?? q.get('behave');
      if (b) return b as Behaviour;
    } catch {
      /* not a URL */
    }
  }
  return 'succeed';
}

/** The bytes the test worker stores for a result: tests compare downloads against this. */
export const fileContent = (task: Pick<Task, 'jobId' | 'resultKey'>) => `result ${task.resultKey} of job ${task.jobId}\n`;

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(new Error('stopped'));
      },
      { once: true },
    );
  });

export interface TestWorkerOptions {
  nc: NatsConnection;
  config: Config;
  log: Logger;
  consumer?: string;
  filterSubject?: string;
  concurrency?: number;
  onTask?: (ctx: TaskContext) => void;
}

export async function startTestWorker(o: TestWorkerOptions) {
  const seen: { jobId: string; resultKey: string; delivery: number }[] = [];
  const handle = await runWorker({
    nc: o.nc,
    config: o.config,
    log: o.log,
    consumer: o.consumer ?? 'test-worker',
    filterSubject: o.filterSubject ?? 'task.websitepro',
    concurrency: o.concurrency ?? 4,
    async handle(ctx) {
      const { task } = ctx;
      seen.push({ jobId: task.jobId, resultKey: task.resultKey, delivery: ctx.deliveryCount });
      o.onTask?.(ctx);
      const ms = typeof task.params.ms === 'number' ? task.params.ms : undefined;
      switch (behaviourOf(task)) {
        case 'fail':
          throw new TaskFailure(
            typeof task.params.error === 'string' ? task.params.error : 'unreachable',
            'the test worker was told to fail',
          );
        case 'crash':
          throw new Error('test worker crash');
        case 'crash-once':
          if (ctx.deliveryCount === 1) throw new Error('test worker crash (first delivery)');
          break;
        // biome-ignore lint/suspicious/noFallthroughSwitchClause: on its first delivery hang-once hangs as hang does
        case 'hang-once':
          if (ctx.deliveryCount > 1) break;
        // falls through
        case 'hang':
          await new Promise((_, reject) => {
            if (ctx.signal.aborted) reject(new Error('stopped'));
            ctx.signal.addEventListener('abort', () => reject(new Error('stopped')), { once: true });
          });
          break;
        case 'progress':
          for (const step of ['connecting', 'checking', 'writing report']) {
            await ctx.progress(step);
            await sleep(ms ?? 300, ctx.signal);
          }
          break;
        case 'slow':
          await sleep(ms ?? 1000, ctx.signal);
          break;
        default:
          break;
      }
      if (task.service === 'shots') {
        // a real (tiny) PNG and WebP thumbnail, like the browser pool stores
        const png = await sharp({ create: { width: 8, height: 6, channels: 3, background: '#3366cc' } })
          .png()
          .toBuffer();
        const file = await storeResultFile(o.nc, task, png, { contentType: 'image/png', filename: task.resultKey });
        file.thumb = await storeThumb(o.nc, task, await sharp(png).resize(4).webp().toBuffer());
        return { file, extra: { worker: 'test' } };
      }
      const file = await storeResultFile(o.nc, task, new TextEncoder().encode(fileContent(task)), {
        contentType: task.params.contentType === undefined ? 'text/plain; charset=utf-8' : String(task.params.contentType),
        filename: `${task.resultKey}.txt`,
      });
      if (task.params.thumb) file.thumb = await storeThumb(o.nc, task, new TextEncoder().encode(`thumb ${task.resultKey}`));
      return { file, extra: { worker: 'test' } };
    },
  });
  return { ...handle, seen };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [natsUrl, consumer, filterSubject, ackWait = '5', maxDeliver = '3'] = process.argv.slice(2);
  const { connectNats } = await import('../../shared/nats/connect.ts');
  const { testConfig } = await import('./nats.ts');
  const { createLogger } = await import('../../shared/log.ts');
  const nc = await connectNats(natsUrl!, 'test-worker-process');
  const config = testConfig({ jobs: { ackWaitSeconds: Number(ackWait), maxDeliver: Number(maxDeliver) } }, natsUrl);
  await startTestWorker({
    nc,
    config,
    log: createLogger('test-worker', 'silent'),
    consumer,
    filterSubject,
    onTask: (ctx) => process.stdout.write(`working ${ctx.task.jobId} ${ctx.task.resultKey} ${ctx.deliveryCount}\n`),
  });
  process.stdout.write('ready\n');
}
