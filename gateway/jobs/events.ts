// Server-Sent Events of one job: every state change and progress line, ending with the final job
// document. Driven by the gateway's one shared watch of the `jobs` bucket (watch.ts), as the long
// poll is, so it wakes on any supervisor's write and works on any gateway instance, and an open
// stream costs nats-server no consumer of its own.
//
// Resuming without server-side memory: each event's id is a cursor that spells the state the
// client has seen after it, `<revision>.<job status letter><one letter per result>` (q/p/c/f for the
// job, p/d/f for results). A reconnect with Last-Event-ID diffs the current document against that
// state, so nothing seen is repeated and nothing missed is lost, whichever gateway answers.
import { setTimeout as sleep } from 'node:timers/promises';
import type { KV } from '@nats-io/kv';
import { isFinished, type JobRecord, type JobStatus, type ResultStatus } from '../../shared/protocol/jobs.ts';
import { readJob } from '../../shared/jobs/store.ts';
import { toPublicJob, toPublicResult } from '../../shared/protocol/public-job.ts';
import { jobWatchOf, type JobWatch } from './watch.ts';
import type { PagesReader } from '../../shared/jobs/page-results.ts';
import { pageEvents } from './page-events.ts';

const JOB_LETTER: Record<JobStatus, string> = { queued: 'q', processing: 'p', completed: 'c', failed: 'f' };
const RESULT_LETTER: Record<ResultStatus, string> = { pending: 'p', done: 'd', failed: 'f' };
const JOB_OF = Object.fromEntries(Object.entries(JOB_LETTER).map(([k, v]) => [v, k])) as Record<string, JobStatus>;
const RESULT_OF = Object.fromEntries(Object.entries(RESULT_LETTER).map(([k, v]) => [v, k])) as Record<string, ResultStatus>;

/** How often a stream without a watch reads the job. */
const POLL_MS = 500;

/** What a client has seen: the job's status and each result's status (in the document's order). */
export interface SeenState {
  revision: number;
  status: JobStatus;
  results: ResultStatus[];
  /** The final `job` event was sent: the stream is over. */
  ended: boolean;
  /** A page set: the PAGES sequence after the last page sent (gateway/jobs/page-events.ts). */
  pagesSeq?: number;
}

export function encodeCursor(s: SeenState): string {
  const pages = s.pagesSeq !== undefined ? `.p${s.pagesSeq}` : '';
  return `${s.revision}.${JOB_LETTER[s.status]}${s.results.map((r) => RESULT_LETTER[r]).join('')}${pages}${s.ended ? '.end' : ''}`;
}

/** The state a Last-Event-ID names, or null when it is not one of ours (or not of this job). */
export function decodeCursor(id: string, resultCount: number): SeenState | null {
  const m = /^(\d{1,15})\.([qpcf])([pdf]*)(?:\.p(\d{1,15}))?(\.end)?$/.exec(id.trim());
  if (!m || m[3]!.length !== resultCount) return null;
  const seen: SeenState = { revision: Number(m[1]), status: JOB_OF[m[2]!]!, results: [...m[3]!].map((c) => RESULT_OF[c]!), ended: !!m[5] };
  if (m[4]) seen.pagesSeq = Number(m[4]);
  return seen;
}

export interface SseMessage {
  event: 'status' | 'progress' | 'result' | 'job';
  data: unknown;
  id: string;
}

/**
 * The messages that take a client from `seen` (null: nothing seen) to `job`, each with the cursor
 * of the state after it. Progress lines are compared with the previous document when there is one;
 * after a resume the current line of each pending result is sent again.
 */
export function diffJob(
  seen: SeenState | null,
  prev: JobRecord | null,
  job: JobRecord,
  revision: number,
  baseUrl: string,
): { messages: SseMessage[]; state: SeenState } {
  const state: SeenState = seen
    ? { ...seen, results: [...seen.results] }
    : { revision, status: job.status, results: job.results.map(() => 'pending' as ResultStatus), ended: false };
  const messages: SseMessage[] = [];
  const push = (event: SseMessage['event'], data: unknown) => messages.push({ event, data, id: encodeCursor({ ...state, revision }) });
  const statusChanged = !seen || seen.status !== job.status;
  const statusEvent = () => {
    state.status = job.status;
    push('status', { id: job.id, status: job.status, at: (isFinished(job) ? job.finishedAt : job.startedAt) ?? job.createdAt });
  };
  // a start is announced before its results; a finish after them
  if (statusChanged && !isFinished(job)) statusEvent();
  job.results.forEach((r, i) => {
    if (r.status !== 'pending') {
      if (state.results[i] === r.status) return;
      state.results[i] = r.status;
      push('result', toPublicResult(job, r, baseUrl));
    } else if (r.progress && r.progress !== prev?.results[i]?.progress) {
      push('progress', { key: r.key, progress: r.progress });
    }
  });
  if (statusChanged && isFinished(job)) statusEvent();
  state.revision = revision;
  return { messages, state };
}

export function frame(m: SseMessage): string {
  // JSON has no raw newlines, so one data line is always enough
  return `id: ${m.id}\nevent: ${m.event}\ndata: ${JSON.stringify(m.data)}\n\n`;
}

export const HEARTBEAT = ': heartbeat\n\n';

export interface JobEventsOptions {
  kv: KV;
  job: JobRecord;
  revision: number;
  baseUrl: string;
  /** The state named by Last-Event-ID, if the client resumes. */
  seen: SeenState | null;
  heartbeatMs: number;
  signal: AbortSignal;
  /** The shared watch of the bucket (default: the one of `kv`, jobWatchOf). */
  watch?: JobWatch;
  /** Reads a page set's results (one `result` event per page). */
  pages?: PagesReader;
}

type Item = { kind: 'doc'; job: JobRecord; revision: number } | { kind: 'beat' } | { kind: 'end' };

/** The event stream as text chunks; ends after the final `job` event or when the client goes away. */
export async function* jobEventStream(o: JobEventsOptions): AsyncGenerator<string> {
  const queue: Item[] = [];
  let wake: (() => void) | null = null;
  const put = (i: Item) => {
    queue.push(i);
    wake?.();
    wake = null;
  };
  const beat = setInterval(() => put({ kind: 'beat' }), o.heartbeatMs);
  const onAbort = () => put({ kind: 'end' });
  o.signal.addEventListener('abort', onAbort, { once: true });
  let unsubscribe: (() => void) | null = null;
  let closed = false;
  let endFollow!: () => void;
  /** Resolves when the stream is over (finished, or the client went away). */
  const over = new Promise<void>((r) => {
    endFollow = r;
  });

  const follow = async () => {
    try {
      let broken!: () => void;
      const brokenP = new Promise<void>((r) => {
        broken = r;
      });
      unsubscribe = await (o.watch ?? jobWatchOf(o.kv)).subscribe(o.job.id, (job, revision) => {
        if (!job) broken();
        else put({ kind: 'doc', job, revision: revision ?? 0 });
      });
      if (unsubscribe) {
        if (closed) return unsubscribe();
        // the shared watch brings writes from its registration on: one read covers a write since
        // the document this stream started from (an older revision is skipped below)
        const cur = await readJob(o.kv, o.job.id).catch(() => null);
        if (cur) put({ kind: 'doc', job: cur.job, revision: cur.revision });
        await Promise.race([brokenP, over]);
        unsubscribe();
        if (closed) return;
      }
    } catch {
      // no watch (a failover): reads take over below
    }
    while (!closed) {
      const cur = await readJob(o.kv, o.job.id).catch(() => null);
      if (cur) put({ kind: 'doc', job: cur.job, revision: cur.revision });
      await sleep(POLL_MS);
    }
  };

  try {
    yield 'retry: 2000\n\n';
    let state = o.seen;
    // a resume at the revision the client saw has nothing new, progress lines included
    let prev: JobRecord | null = state && state.revision === o.revision ? o.job : null;
    let items: Item[] = [{ kind: 'doc', job: o.job, revision: o.revision }];
    let firstItem = true;
    void follow();
    for (;;) {
      for (const item of items) {
        if (item.kind === 'end') return;
        if (item.kind === 'beat') {
          yield HEARTBEAT;
          continue;
        }
        if (state && item.revision < state.revision) continue;
        const before = state?.status;
        const d = diffJob(state, prev, item.job, item.revision, o.baseUrl);
        // a page set's results are read when its count moved (and once at the start: a resume may be behind)
        const pagesMoved = item.job.pageSet && o.pages && (firstItem || item.job.pageSet.resultCount !== prev?.pageSet?.resultCount);
        firstItem = false;
        prev = item.job;
        state = { ...d.state, ...(state?.pagesSeq !== undefined ? { pagesSeq: state.pagesSeq } : {}) };
        // a page set's pages come before its finish, as results do
        const fin = isFinished(item.job) && d.messages.at(-1)?.event === 'status' ? d.messages.pop() : undefined;
        if (d.messages.length) yield d.messages.map(frame).join('');
        if (pagesMoved)
          for await (const p of pageEvents(o.pages!, item.job, state.pagesSeq ?? 1, o.baseUrl)) {
            state.pagesSeq = p.nextSeq;
            // until the finish is sent, the status seen is the one before it
            yield frame({ event: 'result', data: p.data, id: encodeCursor({ ...state, status: fin && before ? before : state.status }) });
          }
        if (fin) yield frame({ ...fin, id: encodeCursor(state) });
        if (isFinished(item.job)) {
          yield frame({ event: 'job', data: toPublicJob(item.job, o.baseUrl), id: encodeCursor({ ...state, ended: true }) });
          return;
        }
      }
      if (!queue.length)
        await new Promise<void>((r) => {
          wake = r;
        });
      items = queue.splice(0);
    }
  } finally {
    closed = true;
    clearInterval(beat);
    o.signal.removeEventListener('abort', onAbort);
    (unsubscribe as (() => void) | null)?.();
    endFollow();
  }
}
