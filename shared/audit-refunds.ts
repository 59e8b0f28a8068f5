// The audit's checks of refunds that are due (issue 28), kept apart from shared/audit.ts, which
// calls them: a failed result is refunded when it fails, so on a quiet system none is left failed and
// not refunded; a job written after its orphan refund is failed, refunded whole by that one entry; and
// a page-set job's results, in PAGES, are refunded each on its own plus one entry for unused slots.
import { isFinished, isUnrefunded, SLOTS_RESULT_KEY, type JobRecord } from './protocol/jobs.ts';
import type { LedgerMessage } from './protocol/wallet.ts';

/** The result key of the wallet's whole-charge refund of a charge whose job did not appear (actors/wallet/orphans.ts). */
export const ORPHAN_RESULT_KEY = '_orphan';

/** Every failed result not refunded, one line each. */
export function unrefundedResults(jobs: Iterable<JobRecord>): string[] {
  const v: string[] = [];
  for (const job of jobs) {
    for (const r of job?.results ?? [])
      if (isUnrefunded(r)) v.push(`job ${job.id}: result ${r.key} failed and not refunded (${job.status})`);
  }
  return v;
}

/**
 * A job marked `orphaned`: its charge given back by exactly one orphan refund of the whole cost,
 * no other refund, and the job failed with every result refunded (nothing charged twice, nothing kept).
 */
export function orphanedJobViolations(
  job: JobRecord,
  charges: Pick<LedgerMessage, 'amount'>[],
  refunds: (Pick<LedgerMessage, 'amount' | 'resultKey'> & { seq: number })[],
): string[] {
  const v: string[] = [];
  const orphan = refunds.filter((e) => e.resultKey === ORPHAN_RESULT_KEY);
  const charged = -charges.reduce((s, e) => s + e.amount, 0);
  if (charges.length !== 1 || charged !== job.cost)
    v.push(`job ${job.id} (orphaned): cost ${job.cost}, ${charges.length} charge entries of ${charged}`);
  if (orphan.length !== 1 || orphan[0]!.amount !== job.cost)
    v.push(`job ${job.id} (orphaned): not refunded whole by one orphan refund (${orphan.map((e) => e.amount).join(', ') || 'none'})`);
  for (const e of refunds)
    if (e.resultKey !== ORPHAN_RESULT_KEY) v.push(`job ${job.id} (orphaned): refunded again for result ${e.resultKey} (entry ${e.seq})`);
  if (job.status !== 'failed' || job.refunded !== job.cost || job.results.some((r) => r.status !== 'failed' || !r.refunded))
    v.push(`job ${job.id} (orphaned): not ended as failed with every result refunded`);
  return v;
}

/** The results of page-set jobs as PAGES holds them: job id → page index → results (a repeated page counted once). */
export type PageResults = Map<string, Map<number, { key: string; status: string; price: number; refunded: boolean }[]>>;

/**
 * A page-set job (websitepro `urls`; shared/jobs/pages.ts): its results are in PAGES, its document
 * keeps counts. Each failed result refunded once by its own entry with its price, nothing else
 * refunded but the one `_slots` entry of the unused slots (as the document says), the document's
 * counts those of PAGES, and once finished: charged = exactly the price of what was delivered.
 */
export function pageSetViolations(
  job: JobRecord,
  refunds: (Pick<LedgerMessage, 'amount' | 'resultKey'> & { seq: number })[],
  pages: PageResults,
): string[] {
  const v: string[] = [];
  const ps = job.pageSet!;
  const results = [...(pages.get(job.id)?.values() ?? [])].flat();
  const slots = refunds.filter((e) => e.resultKey === SLOTS_RESULT_KEY);
  const slotsBack = slots.reduce((s, e) => s + e.amount, 0);
  if (slots.length > 1) v.push(`job ${job.id}: ${slots.length} refunds of unused slots`);
  if (slotsBack !== (ps.slotsRefunded ?? 0))
    v.push(`job ${job.id}: unused slots refunded ${slotsBack} in the ledger but ${ps.slotsRefunded ?? 0} in the job`);
  const byKey = new Map(results.map((r) => [r.key, r]));
  for (const e of refunds) {
    if (e.resultKey === SLOTS_RESULT_KEY) continue;
    const r = byKey.get(e.resultKey ?? '');
    if (!r) v.push(`job ${job.id}: refund entry ${e.seq} for a result not in PAGES (${e.resultKey})`);
    else if (r.status !== 'failed') v.push(`job ${job.id}: result ${r.key} refunded (entry ${e.seq}) but delivered`);
    else if (e.amount !== r.price) v.push(`job ${job.id}: result ${r.key} price ${r.price} refunded as ${e.amount}`);
  }
  for (const r of results) {
    if (r.status !== 'failed' || r.price <= 0) continue;
    const n = refunds.filter((e) => e.resultKey === r.key).length;
    if (n !== 1) v.push(`job ${job.id}: failed result ${r.key} refunded ${n} times`);
  }
  const failedBack = results.filter((r) => r.status === 'failed').reduce((s, r) => s + r.price, 0);
  if (failedBack !== ps.resultsRefunded) v.push(`job ${job.id}: PAGES refunds ${failedBack} but the job counts ${ps.resultsRefunded}`);
  if (results.length !== ps.resultCount) v.push(`job ${job.id}: ${results.length} results in PAGES but the job counts ${ps.resultCount}`);
  if (ps.map && isFinished(job)) v.push(...mapViolations(job, results));
  if (isFinished(job)) {
    const delivered = results.filter((r) => r.status === 'done').reduce((s, r) => s + r.price, 0);
    if (job.cost - job.refunded !== delivered)
      v.push(`job ${job.id}: charged ${job.cost - job.refunded} but delivered ${delivered} (${results.length} results)`);
  }
  return v;
}

/**
 * A finished map (`pageSet.map`): one result `map`, priced ceil(count/1000) blocks (0 when it
 * failed), and `_slots` the blocks of the cap not used: (ceil(slots/1000) - ceil(count/1000)) x the
 * block price (shared/services/websitepro-crawl.ts, actors/job-supervisor/map.ts).
 */
function mapViolations(job: JobRecord, results: { key: string; status: string; price: number }[]): string[] {
  const ps = job.pageSet!;
  const blocks = (n: number) => Math.ceil(n / 1000);
  const price = ps.unitPrices.map ?? 0;
  const count = ps.map?.count ?? 0;
  const used = results[0]?.status === 'done' ? blocks(count) : 0;
  const v: string[] = [];
  if (results.length !== 1 || results[0]!.key !== 'map') v.push(`job ${job.id} (map): ${results.length} results, not the one \`map\``);
  else if (results[0]!.price !== used * price) v.push(`job ${job.id} (map): ${count} URLs priced ${results[0]!.price}, not ${used} blocks`);
  if (job.cost !== blocks(ps.slots) * price) v.push(`job ${job.id} (map): charged ${job.cost} for ${blocks(ps.slots)} blocks`);
  if ((ps.slotsRefunded ?? 0) !== (blocks(ps.slots) - used) * price)
    v.push(`job ${job.id} (map): ${ps.slotsRefunded ?? 0} refunded for unused blocks, not ${(blocks(ps.slots) - used) * price}`);
  return v;
}
