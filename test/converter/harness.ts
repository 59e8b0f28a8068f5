// Runs the real converter actor against a throwaway nats-server, and plays the supervisor's part:
// publish one task per output (as shared/services/websitepro.ts plans them) and collect outcomes.
import { jetstream } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import { startTestNats, testLog, type TestNats } from '../helpers/nats.ts';
import { start } from '../../actors/converter/index.ts';
import { websitepro } from '../../shared/services/websitepro.ts';
import { newId } from '../../shared/ids.ts';
import { objectName, taskMsgId, type Outcome, type Task } from '../../shared/protocol/jobs.ts';
import { BUCKETS, OBJECT_STORES, subjects } from '../../shared/names.ts';
import { Kvm } from '@nats-io/kv';

type Tap = { teardown(fn: () => unknown): void };
export type Final = Extract<Outcome, { kind: 'done' | 'failed' }>;

export async function startConverter(t: Tap, overrides: Record<string, unknown> = {}) {
  const nats: TestNats = await startTestNats(t, overrides);
  const actor = await start({ nc: nats.nc, config: nats.config, log: testLog(), instanceId: 'conv-test' });
  t.teardown(() => actor.stop());
  return { ...nats, ...(await jobRunner(nats)) };
}

/** The supervisor's part only: publish a job's tasks and collect its outcomes (the actor may run elsewhere). */
export async function jobRunner(nats: TestNats) {
  const js = jetstream(nats.nc);
  const store = await new Objm(nats.nc).open(OBJECT_STORES.results);
  // the plan asks the catalogue whether a converter runs (this one advertises itself)
  const catalogueKv = await new Kvm(nats.nc).open(BUCKETS.catalogue);

  /** A job's tasks as the supervisor would publish them, not yet published. */
  async function planJob(url: string, outputs: string[]): Promise<{ jobId: string; tasks: { subject: string; task: Task }[] }> {
    const plan = await websitepro.plan({ url, outputs } as never, { config: nats.config, catalogueKv } as never);
    const jobId = newId('job');
    return {
      jobId,
      tasks: plan.items.map((item) => ({
        subject: item.task!.subject,
        task: {
          v: 1,
          jobId,
          service: 'websitepro',
          resultKey: item.key,
          walletId: 'w_test',
          store: websitepro.store,
          objectName: objectName(jobId, item.key),
          expiresAt: Date.now() + 3600_000,
          params: item.task!.params,
        },
      })),
    };
  }
  const publishTask = (p: { subject: string; task: Task }) =>
    js.publish(p.subject, JSON.stringify(p.task), { msgID: taskMsgId(p.task.jobId, p.task.resultKey) });

  async function runJob(url: string, outputs: string[], timeoutMs = 60000): Promise<Record<string, Final>> {
    return runBody({ url, outputs }, timeoutMs);
  }

  /**
   * A whole websitepro body (controls included), its tasks published as the gateway does at
   * creation: each task message carries its plan item's secret (shared/services/task-secret.ts).
   * `withSecret: false`: as a task published again from the stored job, which has none.
   */
  async function runBody(body: Record<string, unknown>, timeoutMs = 60000, opts: { withSecret?: boolean } = {}) {
    const plan = await websitepro.plan(structuredClone(body) as never, { config: nats.config, catalogueKv } as never);
    const jobId = newId('job');
    const want = new Set(plan.items.map((i) => i.key));
    const got: Record<string, Final> = {};
    const sub = nats.nc.subscribe(subjects.result(jobId));
    const done = (async () => {
      for await (const m of sub) {
        const o = m.json<Outcome>();
        if (o.kind === 'progress' || o.kind === 'lost') continue;
        got[o.resultKey] = o;
        if (Object.keys(got).length === want.size) break;
      }
    })();
    for (const item of plan.items) {
      const secret = opts.withSecret !== false && item.task!.secret ? { secret: item.task!.secret } : {};
      const task: Task = {
        v: 1,
        jobId,
        service: 'websitepro',
        resultKey: item.key,
        walletId: 'w_test',
        store: websitepro.store,
        objectName: objectName(jobId, item.key),
        expiresAt: Date.now() + 3600_000,
        params: { ...item.task!.params, ...secret },
      };
      await js.publish(item.task!.subject, JSON.stringify(task), { msgID: taskMsgId(jobId, item.key) });
    }
    const timer = setTimeout(() => sub.unsubscribe(), timeoutMs);
    await done;
    clearTimeout(timer);
    return got;
  }

  async function read(o: Final): Promise<string> {
    if (o.kind !== 'done' || !o.file) throw new Error(`no file: ${JSON.stringify(o)}`);
    const b = await store.getBlob(o.file.name);
    return Buffer.from(b!).toString('utf8');
  }
  return { runJob, runBody, read, store, planJob, publishTask };
}
