// How long a job's document stays in the `jobs` bucket: until its results expired and were deleted,
// when the job-supervisor moves it to the archive of finished jobs (shared/jobs/archive.ts), where
// it stays retention.jobRecords more. Readers of the bucket alone that take a missing document as
// "this job was never created" (the wallet's orphan-charge sweep, the audit) must not look at
// charges older than the shortest time a document is surely in the bucket: past it, a missing
// document means an archived (or deleted) one.
import type { Config } from '../config/index.ts';

/** The least time after its charge that a created job's document is surely still in the `jobs` bucket. */
export function jobDocumentInBucketMs(config: Pick<Config, 'retention'>): number {
  const r = config.retention;
  // a job's results expire this long after its createdAt; the purge, then the archiving, come later
  const kept = Math.min(r.websitepro, r.shots, r.labs) * 1000;
  // a job's createdAt (its retention's start) is taken before its charge is written, seconds
  // earlier at most: an hour's margin (half of a shorter span, in tests) keeps them apart
  return kept - Math.min(3600_000, kept / 2);
}
