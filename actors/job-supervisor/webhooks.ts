// Webhooks of finished websitepro and shots jobs: one signed POST of the final job document
// (shared/webhook.ts, the key and headers labs uses), retried with backoff, every attempt written to
// the job document. The state lives in the job, not here: an instance claims a delivery for one
// attempt at a time, and the sweep picks up any delivery whose instance died (at least once; the
// delivery id is the job id, the same on every attempt).
import { setTimeout as sleep } from 'node:timers/promises';
import { within } from '../../shared/runtime.ts';
import { readFileSync } from 'node:fs';
import { readJob, updateJob } from '../../shared/jobs/store.ts';
import { postWebhook, retryableStatus, signedHeaders, loadWebhookKey, type WebhookKey } from '../../shared/webhook.ts';
import { WEBHOOK_ATTEMPTS_KEPT, type JobRecord, type WebhookAttempt } from '../../shared/protocol/jobs.ts';
// the one mapping to the public Job document, so the webhook carries what GET /v1/jobs/{id} shows
import { toPublicJob } from '../../shared/protocol/public-job.ts';
import type { Deps } from './steps.ts';
import { publicJobOf, type PagesReader } from '../../shared/jobs/page-results.ts';

export interface WebhookSender {
  /** Start sending this job's webhook if it is due and nobody is on it (no-op otherwise). */
  send(jobId: string): void;
  stop(): Promise<void>;
}

/** The document a job's webhook carries (a page set: its first results and `resultsNext`, as GET /v1/jobs/{id}). */
export async function webhookPayload(job: JobRecord, baseUrl: string, pages?: PagesReader) {
  const full = pages && job.pageSet ? await publicJobOf(pages, job, baseUrl) : toPublicJob(job, baseUrl);
  const { webhook: _state, ...doc } = full as ReturnType<typeof toPublicJob> & { webhook?: unknown };
  return { type: 'job.finished', job: doc };
}

export function startWebhookSender(d: Deps, instanceId: string, key: WebhookKey = loadWebhookKey(d.config)): WebhookSender {
  const { config, log } = d;
  const ca = config.labs.extraCaFile ? readFileSync(config.labs.extraCaFile) : undefined;
  const running = new Map<string, Promise<void>>();
  const stopping = new AbortController();
  // longer than one attempt may take, so a live instance never loses its claim mid-attempt
  const claimMs = config.webhooks.timeoutMs + config.outbound.checkTimeoutMs + 5_000;

  async function deliver(jobId: string): Promise<void> {
    while (!stopping.signal.aborted) {
      const cur = (await readJob(d.jobs, jobId))?.job;
      const w = cur?.webhook;
      if (!w || w.state !== 'pending') return;
      const now = Date.now();
      if (w.claimUntil && w.claimUntil > now && w.claimedBy !== instanceId) return;
      if ((w.nextAt ?? 0) > now) {
        await sleep((w.nextAt ?? now) - now, undefined, { signal: stopping.signal }).catch(() => {});
        continue;
      }
      const claimed = await updateJob(d.jobs, jobId, (j) => {
        const x = j.webhook;
        if (!x || x.state !== 'pending' || (x.claimUntil && x.claimUntil > Date.now() && x.claimedBy !== instanceId)) return false;
        x.claimedBy = instanceId;
        x.claimUntil = Date.now() + claimMs;
        return true;
      });
      if (!claimed?.changed) return;
      const job = claimed.job;
      const attemptNo = job.webhook!.tries + 1;
      const body = JSON.stringify(await webhookPayload(job, job.baseUrl ?? config.server.baseUrl, { js: d.js, jsm: d.jsm }));
      const at = Date.now();
      let attempt: WebhookAttempt;
      let delivered = false;
      let retry = true;
      try {
        const status = await postWebhook(
          new URL(job.webhook!.url),
          body,
          signedHeaders(key, body, job.id, attemptNo, Date.now(), job.walletId),
          config,
          ca,
        );
        attempt = { at, status };
        delivered = status >= 200 && status < 300;
        retry = !delivered && retryableStatus(status);
      } catch (e) {
        attempt = { at, status: null, error: String((e as Error).message).slice(0, 300) };
        // a blocked address does not become public by waiting
        retry = (e as { code?: string }).code !== 'blocked_address';
      }
      const maxTries = 1 + config.webhooks.retries;
      const res = await updateJob(d.jobs, jobId, (j) => {
        const x = j.webhook;
        if (!x || x.state !== 'pending') return false;
        x.tries = attemptNo;
        x.attempts = [...x.attempts, attempt].slice(-WEBHOOK_ATTEMPTS_KEPT);
        delete x.claimedBy;
        delete x.claimUntil;
        if (delivered || !retry || attemptNo >= maxTries) {
          x.state = delivered ? 'delivered' : 'failed';
          delete x.nextAt;
        } else {
          x.nextAt = Date.now() + config.webhooks.backoffMs * 2 ** (attemptNo - 1);
        }
        return true;
      });
      const state = res?.job.webhook?.state;
      if (state === 'delivered') log.info({ jobId, attempts: attemptNo }, 'webhook delivered');
      else if (state === 'failed') log.warn({ jobId, attempts: attemptNo, last: attempt }, 'webhook not delivered');
    }
  }

  return {
    send(jobId) {
      if (running.has(jobId) || stopping.signal.aborted) return;
      const p = deliver(jobId)
        .catch((err) => log.warn({ err, jobId }, 'webhook step failed; the sweep tries again'))
        .finally(() => running.delete(jobId));
      running.set(jobId, p);
    },
    async stop() {
      stopping.abort();
      await within(Promise.allSettled([...running.values()]), 5_000, undefined);
    },
  };
}
