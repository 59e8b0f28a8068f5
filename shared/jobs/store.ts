// The `jobs` bucket: one JobRecord per job id. Every change is a read-modify-write with the
// entry's revision, retried on conflict, so two writers (gateway, several supervisors) never lose
// each other's updates. The writes go through shared/nats/cas.ts (the expected revision, which
// nats-server >= 2.10 holds on a replicated bucket too).
import { Kvm, type KV } from '@nats-io/kv';
import { jetstreamOf } from '../nats/clients.ts';
import type { NatsConnection } from '@nats-io/nats-core';
import { BUCKETS, subjects } from '../names.ts';
import { isCasConflict, kvCasPut, kvUpdate } from '../nats/cas.ts';
import type { JobEvent, JobRecord } from '../protocol/jobs.ts';

export async function openJobsKv(nc: NatsConnection): Promise<KV> {
  return new Kvm(nc).open(BUCKETS.jobs);
}

export interface StoredJob {
  job: JobRecord;
  revision: number;
}

// The stored document (encodeJob / decodeJob): the JobRecord as JSON, but a page set's `state` (one
// character per page) is written as runs, `~` then each character with its count (`~r9990q2-8`; a
// count of 1 left out). A crawl's pages settle roughly in order, so a 10,000-page crawl's document
// stays about 1 KB instead of growing by a byte per page, written and read several times per page
// (its cost grew with the crawl's size). A state without the `~` (written before) reads as it is.

/** A page set's state as runs (`~` first), or as it is when that is not shorter. */
export function packState(state: string): string {
  let out = '~';
  for (let i = 0; i < state.length; ) {
    const c = state[i]!;
    let j = i + 1;
    while (j < state.length && state[j] === c) j++;
    out += j - i > 1 ? `${c}${j - i}` : c;
    i = j;
  }
  return out.length < state.length ? out : state;
}

/** The state as one character per page, from either form. */
export function unpackState(stored: string): string {
  if (!stored.startsWith('~')) return stored;
  let out = '';
  for (const m of stored.slice(1).matchAll(/(\D)(\d*)/g)) out += m[1]!.repeat(m[2] ? Number(m[2]) : 1);
  return out;
}

/** The document as stored in the bucket (and the projection, the archive). */
export function encodeJob(job: JobRecord): string {
  const ps = job.pageSet;
  if (!ps) return JSON.stringify(job);
  const state = packState(ps.state);
  return JSON.stringify(state === ps.state ? job : { ...job, pageSet: { ...ps, state } });
}

/** A parsed stored document made whole (its page set's state one character per page), in place. */
export function expandJob<T extends JobRecord | null | undefined>(job: T): T {
  const ps = job?.pageSet;
  if (ps && typeof ps.state === 'string' && ps.state.startsWith('~')) ps.state = unpackState(ps.state);
  return job;
}

/** A stored document (text or bytes) as the JobRecord it holds. */
export function decodeJob(doc: string | Uint8Array): JobRecord {
  return expandJob(JSON.parse(typeof doc === 'string' ? doc : new TextDecoder().decode(doc)) as JobRecord);
}

export async function readJob(kv: KV, id: string): Promise<StoredJob | null> {
  if (!isJobId(id)) return null;
  const e = await kv.get(id);
  if (!e || e.operation !== 'PUT' || !e.value.length) return null;
  return { job: decodeJob(e.value), revision: e.revision };
}

/** Job ids are also KV keys and subject tokens: only a safe alphabet is ever looked up. */
export function isJobId(id: string): boolean {
  return /^[A-Za-z0-9_-]{1,100}$/.test(id);
}

/** Write a new job; fails if the id exists. */
export async function createJobRecord(kv: KV, job: JobRecord, timeoutMs?: number): Promise<number> {
  return kvCasPut(kv, job.id, encodeJob(job), 0, timeoutMs ? { timeout: timeoutMs } : {});
}

/**
 * Apply `mutate` to the current record and write it back with a revision check, retrying on
 * conflicts. `mutate` changes the record in place and returns false when there is nothing to do
 * (then nothing is written). Returns the record as stored afterwards with its revision (a guess
 * for the caller's next update), or null if the job is gone.
 */
export async function updateJob(
  kv: KV,
  id: string,
  mutate: (job: JobRecord) => boolean,
  tries = 50,
  guess?: StoredJob | null,
): Promise<{ job: JobRecord; changed: boolean; revision: number } | null> {
  if (!isJobId(id)) return null;
  if (guess) {
    // A copy the caller already holds (the supervisor's projection) spares the read: the write
    // carries the copy's revision, so it lands only if the copy was the current record. Stale, or
    // nothing to change on it (which a stale copy cannot tell): read and decide as usual.
    const next = structuredClone(guess.job);
    if (mutate(next)) {
      try {
        const revision = await kvCasPut(kv, id, encodeJob(next), guess.revision);
        return { job: next, changed: true, revision };
      } catch (e) {
        if (!isCasConflict(e)) throw e;
      }
    }
  }
  let out: { job: JobRecord; changed: boolean; revision: number } | null = null;
  const written = await kvUpdate(
    kv,
    id,
    (e) => {
      out = null;
      if (!e || e.operation !== 'PUT' || !e.value.length) return undefined;
      const cur = decodeJob(e.value);
      const next = structuredClone(cur);
      if (!mutate(next)) {
        out = { job: cur, changed: false, revision: e.revision };
        return undefined;
      }
      out = { job: next, changed: true, revision: e.revision };
      return encodeJob(next);
    },
    tries,
  );
  if (out && written !== undefined) (out as { revision: number }).revision = written;
  return out;
}

/**
 * Sum of the prices of the refunded results: the job's `refunded`, always derived, never counted up.
 * A page-set job's results are in PAGES: its document's counts of refunded results and slots.
 */
export function refundedTotal(job: JobRecord): number {
  const pages = job.pageSet ? job.pageSet.resultsRefunded + (job.pageSet.slotsRefunded ?? 0) : 0;
  return pages + job.results.reduce((s, r) => s + (r.refunded ? r.price : 0), 0);
}

/** Tell operators (EVENTS stream) that a job changed. Best effort: the KV record is the truth. */
export async function publishJobEvent(nc: NatsConnection, job: JobRecord, event: string): Promise<void> {
  const js = jetstreamOf(nc);
  const e: JobEvent = {
    v: 1,
    jobId: job.id,
    service: job.service,
    walletId: job.walletId,
    status: job.status,
    event,
    cost: job.cost,
    refunded: job.refunded,
    at: Date.now(),
  };
  await js.publish(subjects.evtJob(job.service, job.id), JSON.stringify(e)).catch(() => {});
}
