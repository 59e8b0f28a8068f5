// How long a job's document stays in the `jobs` bucket: until retention.jobRecords after its results
// expired (the job-supervisor deletes it then). Readers that take a missing document as "this job
// was never created" (the wallet's orphan-charge sweep, the audit) must not look at charges older
// than the shortest time a document is kept: past it, a missing document means a deleted one.
import type { Config } from '../config/index.ts';

/** The least time after its charge that a created job's document is surely still in the bucket. */
export function jobRecordKeptMs(config: Pick<Config, 'retention'>): number {
  const r = config.retention;
  const kept = (Math.min(r.websitepro, r.shots, r.labs) + r.jobRecords) * 1000;
  // a job's createdAt (its retention's start) is taken before its charge is written, seconds
  // earlier at most: an hour's margin (half of a shorter span, in tests) keeps them apart
  return kept - Math.min(3600_000, kept / 2);
}
