// relay-prober: runs the labs modules (quick, conformance, custom selections) against Nostr relays,
// stores each labs.report/1 in the reports object store, and delivers it to the job's webhook.
import { readFileSync } from 'node:fs';
import { Kvm, type KV } from '@nats-io/kv';
import { hostname } from 'node:os';
import { BUCKETS, CONSUMERS, subjects } from '../../shared/names.ts';
import { runWorker, storeResultFile, type TaskContext, type TaskResult } from '../../shared/worker.ts';
import { TaskFailure, WEBHOOK_ATTEMPTS_KEPT, type ResultWebhook } from '../../shared/protocol/jobs.ts';
import { openJobsKv, updateJob } from '../../shared/jobs/store.ts';
import { withRetry, within } from '../../shared/runtime.ts';
import { advertise } from '../../shared/catalogue.ts';
import { LABS_MODULES } from '../../shared/services/index.ts';
import { LABS_REPORT_SCHEMA_ID } from '../../shared/schemas/labs-report.ts';
import type { ActorContext, ActorHandle } from '../../shared/actor.ts';
import type { Config } from '../../shared/config/index.ts';
import { CHECKS, checkInfo } from './checks/index.ts';
import { BOUNDS, ProbeFatal, TEST_MARKER, CLIENT_TAG } from './probe.ts';
import { startCleanups } from './cleanups.ts';
import { runModule, type RunModule } from './run.ts';
import { deliverWebhook, loadWebhookKey, webhookInfo, type WebhookKey } from '../../shared/webhook.ts';

export interface LabsTaskParams {
  relay: string;
  module: RunModule;
  checks?: string[];
  webhook?: string | null;
}

/** What GET /v1/services/labs lists (the live catalogue entry). */
export function labsCatalogue(config: Config, key: WebhookKey) {
  return {
    modules: LABS_MODULES.map((m) => ({ id: m, checks: CHECKS.filter((c) => c.module === m).map((c) => c.id) })),
    checks: CHECKS.map(checkInfo),
    selectable: CHECKS.filter((c) => c.selectable).map((c) => c.id),
    allowedPorts: config.labs.allowedPorts,
    limits: {
      ...BOUNDS,
      relayTestsPerHour: config.labs.relayTestsPerHour,
      moduleTimeoutMs: config.labs.moduleTimeoutMs,
      testEventTags: [[...TEST_MARKER], [...CLIENT_TAG]],
    },
    webhook: webhookInfo(key, config),
    reportSchema: LABS_REPORT_SCHEMA_ID,
  };
}

export async function start({ nc, config, log, instanceId }: ActorContext): Promise<ActorHandle> {
  const key = loadWebhookKey(config);
  const ca = config.labs.extraCaFile ? readFileSync(config.labs.extraCaFile) : undefined;
  const pending = new Set<Promise<unknown>>();
  const jobsKv = await withRetry('jobs bucket', () => openJobsKv(nc));
  const stopping = new AbortController();
  const cleanups = startCleanups({
    kv: await withRetry('labs clean-ups bucket', () => new Kvm(nc).open(BUCKETS.labsCleanups)),
    config,
    log,
    ca,
    instanceId: instanceId || `${hostname()}-${process.pid}`,
  });

  async function handle(ctx: TaskContext): Promise<TaskResult> {
    const { task } = ctx;
    const params = task.params as unknown as LabsTaskParams;
    let report;
    try {
      ({ report } = await runModule({
        url: params.relay,
        module: params.module,
        checks: params.checks,
        config,
        ca,
        signal: ctx.signal,
        log,
        cleanups: cleanups.keeper,
        progress: (t) => {
          void ctx.progress(t);
        },
      }));
    } catch (e) {
      if (e instanceof ProbeFatal) throw new TaskFailure(e.code, e.message);
      throw e;
    }
    const body = new TextEncoder().encode(JSON.stringify(report, null, 2));
    const host = new URL(params.relay).host.replace(/[^\w.-]/g, '_');
    const file = await storeResultFile(nc, task, body, { contentType: 'application/json', filename: `labs-${params.module}-${host}.json` });
    if (params.webhook) {
      const url = params.webhook;
      const { jobId, resultKey } = task;
      // every attempt is written to the result's `webhook` in the job document, as the supervisor
      // does for the job webhooks of the other services (GET /v1/jobs/{id} shows them)
      const record = (change: (w: ResultWebhook) => void) =>
        recordResultWebhook(jobsKv, jobId, resultKey, url, change).catch((err) =>
          log.warn({ err, jobId, resultKey }, 'webhook state not written to the job'),
        );
      let final = false;
      const p = record((w) => {
        w.state = 'pending';
      })
        .then(() =>
          deliverWebhook({
            url,
            payload: {
              type: 'labs.report',
              jobId,
              resultKey,
              relay: report.relay.url,
              module: report.module,
              score: report.score,
              summary: report.summary,
              report,
            },
            deliveryId: `${jobId}:${resultKey}`,
            key,
            walletId: task.walletId,
            config,
            ca,
            signal: stopping.signal,
            onAttempt: (attempt, r, nextAt) => {
              final = nextAt === undefined;
              return record((w) => {
                w.tries += 1; // all attempts, also those of an earlier delivery of the same task
                w.attempts = [...w.attempts, attempt].slice(-WEBHOOK_ATTEMPTS_KEPT);
                if (final) {
                  w.state = r.delivered ? 'delivered' : 'failed';
                  delete w.nextAt;
                } else w.nextAt = nextAt;
              });
            },
          }),
        )
        .then(async (r) => {
          // stopped between two attempts: this prober gives the delivery up, and says so
          if (!final)
            await record((w) => {
              w.state = 'failed';
              delete w.nextAt;
            });
          if (r.delivered) log.info({ jobId, resultKey, attempts: r.attempts }, 'webhook delivered');
          else log.warn({ jobId, resultKey, ...r }, 'webhook not delivered');
        })
        .catch((e) => log.warn({ err: e }, 'webhook failed'))
        .finally(() => pending.delete(p));
      pending.add(p);
    }
    return { file, extra: { score: report.score, summary: report.summary } };
  }

  const worker = await runWorker({
    nc,
    config,
    log,
    consumer: CONSUMERS.relayProber,
    filterSubject: subjects.taskLabs,
    concurrency: config.labs.concurrency,
    handle,
  });
  const ad = await advertise(nc, 'labs', instanceId || `${hostname()}-${process.pid}`, () => labsCatalogue(config, key));
  log.info({ checks: CHECKS.length }, 'relay-prober started');
  return {
    async stop() {
      await ad.stop();
      await worker.stop();
      // the clean-ups of the runs the stop cut short, each within its own bound (what does not
      // finish in time is left in the bucket for the next prober)
      await cleanups.stop();
      stopping.abort();
      await within(Promise.allSettled([...pending]), 5000, undefined);
    },
  };
}

/** Change the delivery state of one labs result's webhook in its job document (created on first use). */
async function recordResultWebhook(
  jobs: KV,
  jobId: string,
  resultKey: string,
  url: string,
  change: (w: ResultWebhook) => void,
): Promise<void> {
  await updateJob(jobs, jobId, (j) => {
    const r = j.results.find((x) => x.key === resultKey);
    if (!r) return false;
    r.webhook ??= { url, state: 'pending', tries: 0, attempts: [] };
    change(r.webhook);
    return true;
  });
}
