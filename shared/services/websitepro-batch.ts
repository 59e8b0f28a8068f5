// websitepro with `urls` (a batch): one job, one quote item per output with its quantity, one
// charge; the reachability precheck runs once per distinct host, and a host that does not answer
// makes its pages failed, refunded results instead of refusing the job (issue 42; docs/websitepro.md
// "Batch"). The pages themselves are run by the supervisor (shared/jobs/pages.ts).
import { subjects } from '../names.ts';
import { ApiError } from '../errors.ts';
import { parseTargetUrl, hostOf, precheckTarget } from '../outbound/index.ts';
import { planBatch } from '../crawl/keys.ts';
import type { Config } from '../config/index.ts';
import type { Plan } from './types.ts';

/** Reachability checks of one batch's hosts run this many at once. */
const PRECHECK_PARALLEL = 8;

/** `target` of a batch: its host, or the first host and how many others (`example.com +3`). */
export function batchTarget(hosts: string[]): string {
  const first = hostOf(new URL(`http://${hosts[0]}`));
  return hosts.length > 1 ? `${first} +${hosts.length - 1}` : first;
}

export function planBatchJob(urls: string[], outputs: string[], config: Config): Plan {
  const prices = config.pricing.websitepro as Record<string, number>;
  const { pages, hosts } = planBatch(urls, (raw, i) => parseTargetUrl(raw, `urls[${i}]`));
  const slots = urls.length;
  const unitPrices = Object.fromEntries(outputs.map((o) => [o, prices[o]!]));
  return {
    target: batchTarget(hosts),
    items: outputs.map((o) => ({
      key: o,
      price: unitPrices[o]! * slots,
      quantity: slots,
      unitPrice: unitPrices[o]!,
      // no task: the pages are the tasks (shared/jobs/pages.ts)
    })),
    pageSet: {
      kind: 'batch',
      outputs,
      unitPrices,
      slots,
      pages: pages.length,
      // pages in flight at once: the politeness window, within the wallet's share of the converters
      window: Math.max(1, Math.min(config.crawl.concurrency, config.limits.walletTasks)),
      state: '-'.repeat(pages.length),
      resultCount: 0,
      done: 0,
      failed: 0,
      resultsRefunded: 0,
    },
  };
}

/**
 * One check per distinct host (the per-key check limit counts hosts, not URLs). A blocked address
 * or a malformed URL refuses the job (bad input, nothing charged); an unreachable host is noted in
 * the plan and its pages fail, refunded. Every host unreachable: nothing could be delivered, so the
 * job is refused as a one-page job would be (`unreachable`, nothing charged).
 */
export async function precheckBatch(urls: string[], plan: Plan, config: Config, walletId: string): Promise<void> {
  const byHost = new Map<string, string>();
  for (const raw of urls) {
    const u = parseTargetUrl(raw);
    if (!byHost.has(u.host)) byHost.set(u.host, u.href);
  }
  const hosts = [...byHost.entries()];
  const down: Record<string, { error: string; message: string }> = {};
  for (let i = 0; i < hosts.length; i += PRECHECK_PARALLEL) {
    const part = hosts.slice(i, i + PRECHECK_PARALLEL);
    const checks = await Promise.allSettled(part.map(([, href]) => precheckTarget(href, config, undefined, walletId)));
    checks.forEach((c, j) => {
      if (c.status === 'fulfilled') return;
      const e = c.reason;
      if (e instanceof ApiError && e.code === 'unreachable') down[part[j]![0]] = { error: 'unreachable', message: e.message };
      else throw e;
    });
  }
  if (Object.keys(down).length === hosts.length) {
    const [host, why] = Object.entries(down)[0]!;
    throw new ApiError('unreachable', `no host of the batch answers (${host}: ${why.message}); nothing was charged`);
  }
  if (Object.keys(down).length && plan.pageSet) plan.pageSet.unreachable = down;
}

export const taskSubjectOfPages = subjects.taskWebsitepro;
