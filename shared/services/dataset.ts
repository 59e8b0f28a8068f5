// The wallet's one-time labs dataset fee: at most one job of a wallet keeps it. The `datasets`
// bucket holds one mark per wallet naming the job that carries the fee. Job creation claims the
// mark with a compare-and-set create before charging (gateway/jobs/create.ts): of any number of
// concurrent creations exactly one wins and carries the fee, the others are created without it.
// The mark is given back when that job's charge fails, and when the job delivers no result that
// needed the dataset (its fee is then refunded: actors/job-supervisor/steps.ts), so a later job
// carries the fee again.
// A claim is written `pending` and confirmed once the job's document is stored. A pending mark whose
// job never appeared (its gateway died between the claim and the write) is abandoned: the plan then
// quotes the fee again and the next job's claim takes the mark over. A confirmed mark is never taken
// over, whatever becomes of its job (archived, then deleted with its record retention): the fee was
// paid. Marks written before the flag existed count as confirmed. `admin audit` reports a held mark
// whose job does not exist (shared/audit.ts).
import type { KV } from '@nats-io/kv';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError } from '../errors.ts';
import { kvCasDelete, kvCasPut, isCasConflict } from '../nats/cas.ts';
import type { JobRecord, ResultRecord } from '../protocol/jobs.ts';

export interface DatasetMark {
  jobId: string;
  at: number;
  /** Claimed, the job's document not yet known to be stored. */
  pending?: true;
}

/** What a job creation needs to tell an abandoned mark from a held one. */
export interface MarkStaleness {
  jobs: KV;
  /** How long after its claim a job's document may still appear (gateway/jobs/create.ts jobMayAppearMs). */
  staleMs: number;
}

/** The result that is the dataset fee: no work of its own. */
export const isDatasetFee = (r: Pick<ResultRecord, 'key' | 'subject'>) => r.key === 'dataset' && !r.subject;

/**
 * The results that use the dataset. Jobs made before results were flagged have no flag at all:
 * for them every result with work counts (the rule of that time).
 */
export function datasetUsers(job: Pick<JobRecord, 'results'>): ResultRecord[] {
  const flagged = job.results.some((r) => r.needsDataset !== undefined);
  return job.results.filter((r) => r.subject && (flagged ? r.needsDataset === true : true));
}

const holder = (e: { operation: string; value: Uint8Array; json<T>(): T } | null): string | null | undefined => {
  if (!e || e.operation !== 'PUT' || !e.value.length) return null; // free (never set, or given back)
  try {
    return e.json<Partial<DatasetMark>>().jobId ?? undefined;
  } catch {
    return undefined; // held, by nobody we can name
  }
};

/**
 * Claim the wallet's mark for `jobId`. Returns the mark's revision, or null when another job holds
 * it (that job carries the fee). Compare-and-set on the revision read, so two claims never both win.
 * A mark older than `staleMs` whose job has no document (its gateway died between the claim and
 * the job's write) is taken over: left alone, the wallet would never pay the fee again.
 */
export async function claimDatasetMark(kv: KV, walletId: string, jobId: string, stale?: MarkStaleness): Promise<number | null> {
  for (let attempt = 0; attempt < 30; attempt++) {
    const cur = await kv.get(walletId);
    const held = holder(cur);
    if (held !== null && !(held && stale && (await isAbandoned(cur!, held, stale)))) return null;
    try {
      const mark: DatasetMark = { jobId, at: Date.now(), pending: true };
      return await kvCasPut(kv, walletId, JSON.stringify(mark), cur?.revision ?? 0);
    } catch (e) {
      if (!isCasConflict(e)) throw e;
      await sleep(Math.random() * Math.min(100, 5 * (attempt + 1)));
    }
  }
  throw new ApiError('service_unavailable', 'too many concurrent job creations of this wallet; retry', {}, { 'retry-after': '1' });
}

async function isAbandoned(mark: { json<T>(): T }, heldBy: string, stale: MarkStaleness): Promise<boolean> {
  let m: Partial<DatasetMark> = {};
  try {
    m = mark.json<Partial<DatasetMark>>();
  } catch {
    /* unreadable: held by nobody we can name, never taken over */
  }
  if (m.pending !== true) return false; // confirmed (or written before claims were confirmed): paid
  if (Date.now() - (Number(m.at) || 0) < stale.staleMs) return false;
  const doc = await stale.jobs.get(heldBy);
  return !doc || doc.operation !== 'PUT' || !doc.value.length;
}

/**
 * Whether a new dataset job of the wallet carries the fee (what its plan quotes): the mark is free,
 * or held by a claim whose job never appeared (abandoned: the job's claim takes it over). A pending
 * mark whose job exists is confirmed on the way, as its creation would have done.
 */
export async function datasetFeeOwed(kv: KV, walletId: string, stale?: MarkStaleness): Promise<boolean> {
  const cur = await kv.get(walletId);
  const held = holder(cur);
  if (held === null) return true;
  if (!held || !stale) return false;
  if (await isAbandoned(cur!, held, stale)) return true;
  // pending, and either young (its creation confirms it) or its job exists: confirmed here, so that
  // a creation that died between its write and its confirmation leaves no mark to take over later
  const m = cur!.json<Partial<DatasetMark>>();
  if (m.pending === true && Date.now() - (Number(m.at) || 0) >= stale.staleMs) await confirmDatasetMark(kv, walletId, held).catch(() => {}); // best effort: the next look does it
  return false;
}

/**
 * Mark the claim of `jobId` confirmed: its job's document is stored, so the mark is never taken
 * over. Compare-and-set; a mark no longer held by `jobId` is left alone.
 */
export async function confirmDatasetMark(kv: KV, walletId: string, jobId: string): Promise<void> {
  for (let attempt = 0; attempt < 30; attempt++) {
    const cur = await kv.get(walletId);
    if (!cur || holder(cur) !== jobId) return;
    const m = cur.json<DatasetMark>();
    if (m.pending !== true) return;
    try {
      await kvCasPut(kv, walletId, JSON.stringify({ jobId, at: m.at } satisfies DatasetMark), cur.revision);
      return;
    } catch (e) {
      if (!isCasConflict(e)) throw e;
    }
  }
}

/** Give the mark back if `jobId` holds it; a mark held by another job is left alone. Idempotent. */
export async function releaseDatasetMark(kv: KV, walletId: string, jobId: string): Promise<void> {
  for (let attempt = 0; attempt < 30; attempt++) {
    const cur = await kv.get(walletId);
    if (!cur || holder(cur) !== jobId) return;
    try {
      await kvCasDelete(kv, walletId, cur.revision);
      return;
    } catch (e) {
      if (!isCasConflict(e)) throw e; // a conflict: read again; it may no longer be ours
    }
  }
  throw new ApiError('service_unavailable', `the dataset mark of ${walletId} could not be given back`);
}
