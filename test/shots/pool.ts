// Browser-pool actors on a test NATS: start one in this process, publish shot tasks the way the
// job supervisor does, and collect the outcomes workers report.
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { start, type BrowserPoolHandle } from '../../actors/browser-pool/index.ts';
import { OBJECT_STORES, subjects } from '../../shared/names.ts';
import { objectName, taskMsgId, type Outcome, type Task } from '../../shared/protocol/jobs.ts';
import { shotKey } from '../../shared/services/shots.ts';
import type { ShotParams } from '../../actors/browser-pool/capture.ts';
import { testLog, type TestNats } from '../helpers/nats.ts';
import type { Config } from '../../shared/config/index.ts';

type Tap = { teardown(fn: () => unknown): void };

export async function startPool(
  t: Tap,
  tn: TestNats,
  browsers: string[],
  instanceId: string,
  shots: Partial<Config['shots']> = {},
): Promise<BrowserPoolHandle> {
  const config: Config = { ...tn.config, shots: { ...tn.config.shots, browsers, ...shots } };
  const nc = await tn.connect(instanceId);
  const h = await start({ nc, config, log: testLog(), instanceId });
  let stopped = false;
  t.teardown(() => (stopped ? undefined : h.stop()));
  return {
    ...h,
    stop: async () => {
      stopped = true;
      await h.stop();
    },
  };
}

let seq = 0;

export function shotTask(jobId: string, p: Omit<ShotParams, 'options'> & { options?: Partial<ShotParams['options']> }): Task {
  const resultKey = shotKey(p.browser, p.version, p.viewport, p.scheme);
  return {
    v: 1,
    jobId,
    service: 'shots',
    resultKey,
    walletId: 'w_test',
    store: OBJECT_STORES.results,
    objectName: objectName(jobId, resultKey),
    expiresAt: Date.now() + 3600_000,
    params: { ...p, options: { fullPage: false, retina: false, hideCookieBanner: false, delay: 0, ...(p.options ?? {}) } },
  };
}

export async function publishTask(nc: NatsConnection, task: Task) {
  const p = task.params as unknown as ShotParams;
  await jetstream(nc).publish(subjects.taskShots(p.browser, p.version), JSON.stringify(task), {
    msgID: taskMsgId(task.jobId, task.resultKey),
  });
}

export const newJobId = () => `job_test${Date.now().toString(36)}${seq++}`;

/** Final outcomes (done/failed) reported on result.<jobId>, by result key. */
export function watchOutcomes(nc: NatsConnection, jobId: string) {
  const got = new Map<string, Outcome>();
  const waiters: (() => void)[] = [];
  const sub = nc.subscribe(subjects.result(jobId), {
    callback: (_e, m) => {
      const o = m.json<Outcome>();
      if (o.kind === 'progress') return;
      got.set(o.resultKey, o);
      waiters.splice(0).forEach((w) => w());
    },
  });
  return {
    got,
    async waitFor(n: number, ms = 60000): Promise<Map<string, Outcome>> {
      const deadline = Date.now() + ms;
      while (got.size < n) {
        if (Date.now() > deadline) throw new Error(`only ${got.size} of ${n} outcomes after ${ms} ms`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 500);
        });
      }
      return got;
    },
    stop: () => sub.unsubscribe(),
  };
}
