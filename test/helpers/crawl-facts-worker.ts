// The converter's side of the session-30 contract section 1 for crawl pages (`retry`, `skipped`,
// `canonical`, `crawlDelayMs`), as a task worker on the converter's own consumer, for the
// supervisor's tests until the converter branch (s30-conv) produces those facts: it reads a page's
// own origin's robots.txt when the task asks (`crawl.originRobots`, real fetchRobots), fetches the
// page once from the test's real HTTP server (guardedFetch), answers a 429/503 as `retry` with its
// parsed Retry-After, reads `<link rel=canonical>` and `<a href>` links, and stores one small file
// per output. Everything else (the gateway, the supervisor, the wallet, NATS) is the real service.
// `resolver`: names like `docs.localhost` resolve to 127.0.0.1 (subdomains of a local test site).
import type { NatsConnection } from '@nats-io/nats-core';
import { runWorker } from '../../shared/worker.ts';
import { advertise } from '../../shared/catalogue.ts';
import { CONSUMERS, subjects } from '../../shared/names.ts';
import type { Config } from '../../shared/config/index.ts';
import { guardedFetch } from '../../shared/outbound/index.ts';
import { fetchRobots } from '../../shared/crawl/robots.ts';
import { parseRetryAfter } from '../../shared/crawl/politeness.ts';
import { uniqueKey } from '../../shared/crawl/normalize.ts';
import { resultKey } from '../../shared/crawl/keys.ts';
import { objectName } from '../../shared/protocol/jobs.ts';
import { putObject } from '../../shared/nats/objects.ts';
import type { PageTaskParams } from '../../shared/jobs/pages.ts';
import { testLog } from './nats.ts';

const resolver = async (hostname: string) =>
  hostname === 'localhost' || hostname.endsWith('.localhost') ? [{ address: '127.0.0.1', family: 4 }] : [];

/**
 * `hold(url)`: that page's task is taken and held without an answer until the worker stops (then it
 * is handed back with no outcome, as a converter killed mid-page); `held` lists the URLs held.
 */
export async function startCrawlFactsWorker(
  t: { teardown(fn: () => unknown): void },
  nc: NatsConnection,
  config: Config,
  o: { hold?: (url: string) => boolean } = {},
) {
  const held: string[] = [];
  const guard = { allowCidrs: config.outbound.allowCidrs, resolver, maxRedirects: 5 };
  const w = await runWorker({
    nc,
    config,
    log: testLog(),
    consumer: CONSUMERS.converter,
    filterSubject: subjects.taskWebsitepro,
    concurrency: 4,
    async handle({ task, signal }) {
      const p = task.params as unknown as PageTaskParams;
      if (o.hold?.(p.url)) {
        held.push(p.url);
        await new Promise((r) => signal.addEventListener('abort', r, { once: true }));
        throw new Error('stopped while holding the page');
      }
      const origin = new URL(p.url).origin;
      let robots: { status: number | null; text: string } | undefined;
      let crawlDelayMs: number | undefined;
      if (p.crawl?.robots || p.crawl?.originRobots) {
        const rules = await fetchRobots(origin, { guard, ...config.crawl });
        if (p.crawl.originRobots) {
          if (rules.state === 'unreachable') return { extra: { page: p.url, outputs: {}, skipped: 'robots_unavailable' } };
          if (!rules.allows(p.url)) return { extra: { page: p.url, outputs: {}, skipped: 'robots', crawlDelayMs: rules.crawlDelayMs } };
          crawlDelayMs = rules.crawlDelayMs;
        } else robots = { status: rules.status, text: rules.text ?? '' };
      }
      const res = await guardedFetch(p.url, { ...guard, timeoutMs: 5000, maxBytes: 1_000_000 });
      const facts = { ...(robots ? { robots } : {}), ...(crawlDelayMs !== undefined ? { crawlDelayMs } : {}) };
      if (res.status === 429 || res.status === 503) {
        const retryAfterMs = parseRetryAfter(res.headers['retry-after'], Date.now());
        return { extra: { page: res.url, outputs: {}, retry: { status: res.status, retryAfterMs }, ...facts } };
      }
      if (res.status >= 400) {
        const f = { error: 'http_error', message: `the target answered HTTP ${res.status}` };
        return { extra: { page: res.url, outputs: Object.fromEntries(p.outputs.map((o) => [o, f])), ...facts } };
      }
      const html = res.body.toString('utf8');
      const links = [...html.matchAll(/<a [^>]*href="([^"]+)"/g)].map((m) => new URL(m[1]!, res.url).href);
      const c = /<link rel="canonical" href="([^"]+)"/.exec(html)?.[1];
      const canon = c ? new URL(c, res.url) : null;
      const canonical =
        canon && canon.origin === new URL(res.url).origin && uniqueKey(canon.href) !== uniqueKey(res.url) ? canon.href : undefined;
      const outputs: Record<string, unknown> = {};
      for (const o of p.outputs) {
        const data = new TextEncoder().encode(html.replace(/<[^>]+>/g, ' '));
        const name = objectName(task.jobId, resultKey(p.pageKey, o));
        await putObject(nc, task.store, { name, description: 'text/plain' }, data);
        outputs[o] = { file: { store: task.store, name, contentType: 'text/plain', bytes: data.length, filename: `${o}.txt` } };
      }
      return { extra: { page: res.url, outputs, links, ...(canonical ? { canonical } : {}), ...facts } };
    },
  });
  // the gateway takes websitepro jobs while a converter instance says it is running
  const ad = await advertise(nc, 'websitepro', 'crawl-facts-worker', () => ({ outputs: [] }));
  t.teardown(async () => {
    await ad.stop();
    await w.stop();
  });
  return { stop: () => w.stop(), held };
}
