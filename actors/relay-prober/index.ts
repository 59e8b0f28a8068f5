// relay-prober: runs the labs modules (quick, conformance, custom selections) against Nostr relays,
// stores each labs.report/1 in the reports object store, and delivers it to the job's webhook.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { CONSUMERS, subjects } from '../../shared/names.ts';
import { runWorker, storeResultFile, type TaskContext, type TaskResult } from '../../shared/worker.ts';
import { TaskFailure } from '../../shared/protocol/jobs.ts';
import { advertise } from '../../shared/catalogue.ts';
import { LABS_MODULES } from '../../shared/services/index.ts';
import { LABS_REPORT_SCHEMA_ID } from '../../shared/schemas/labs-report.ts';
import type { ActorContext, ActorHandle } from '../../shared/actor.ts';
import type { Config } from '../../shared/config/index.ts';
import { CHECKS, checkInfo } from './checks/index.ts';
import { BOUNDS, ProbeFatal, TEST_MARKER, CLIENT_TAG } from './probe.ts';
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
  const stopping = new AbortController();

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
        progress: (t) => { void ctx.progress(t); },
      }));
    } catch (e) {
      if (e instanceof ProbeFatal) throw new TaskFailure(e.code, e.message);
      throw e;
    }
    const body = new TextEncoder().encode(JSON.stringify(report, null, 2));
    const host = new URL(params.relay).host.replace(/[^\w.-]/g, '_');
    const file = await storeResultFile(nc, task, body, { contentType: 'application/json', filename: `labs-${params.module}-${host}.json` });
    if (params.webhook) {
      const p = deliverWebhook({
        url: params.webhook,
        payload: { type: 'labs.report', jobId: task.jobId, resultKey: task.resultKey, relay: report.relay.url, module: report.module, score: report.score, summary: report.summary, report },
        deliveryId: `${task.jobId}:${task.resultKey}`,
        key,
        config,
        ca,
        signal: stopping.signal,
      }).then((r) => {
        if (r.delivered) log.info({ jobId: task.jobId, resultKey: task.resultKey, attempts: r.attempts }, 'webhook delivered');
        else log.warn({ jobId: task.jobId, resultKey: task.resultKey, ...r }, 'webhook not delivered');
      }).catch((e) => log.warn({ err: e }, 'webhook failed'))
        .finally(() => pending.delete(p));
      pending.add(p);
    }
    return { file, extra: { score: report.score, summary: report.summary } };
  }

  const worker = await runWorker({ nc, config, log, consumer: CONSUMERS.relayProber, filterSubject: subjects.taskLabs, concurrency: config.labs.concurrency, handle });
  const ad = await advertise(nc, 'labs', instanceId || `${hostname()}-${process.pid}`, () => labsCatalogue(config, key));
  log.info({ checks: CHECKS.length }, 'relay-prober started');
  return {
    async stop() {
      await ad.stop();
      await worker.stop();
      stopping.abort();
      await Promise.race([Promise.allSettled([...pending]), new Promise((r) => setTimeout(r, 5000))]);
    },
  };
}
