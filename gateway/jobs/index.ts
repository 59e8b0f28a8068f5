// The gateway's job logic, used only by the job routes: quote and create (charge, document, publish,
// refund on failure), the long poll, the mapping of a stored job to the API's Job, and finding a job in the
// bucket or, once archived, through a job-supervisor.
export { quoteJob, submitJob, commitJob, newJobRecord, refundWholeJob, jobMayAppearMs, type JobDeps } from './create.ts';
export { JobWatch, jobWatchOf } from './watch.ts';
export { toPublicJob, toPublicResult, isExpired, resultPath } from '../../shared/protocol/public-job.ts';
export { reportPageReply, wantsReportHtml, renderLabsReportHtml } from './labs-report-html.ts';
export { jobEventStream, decodeCursor, type SeenState } from './events.ts';
export { findJob } from './find.ts';
export { openStreamsOf } from './stream-cap.ts';
export { retryCreation } from './retry.ts';
