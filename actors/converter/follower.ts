// A follower task of a websitepro job waits for what the leader made of its output (index.ts).
import { subjects } from '../../shared/names.ts';
import type { TaskContext } from '../../shared/worker.ts';
import type { Outcome } from '../../shared/protocol/jobs.ts';
import { hasFacts, readIndex, storedFile, type Deps, type Entry, type Output } from './job-files.ts';

/**
 * A follower waits for what the leader made of its output: its outcome on `result.<jobId>` (the
 * leader reports it), else its stored file, else the index (failed outputs, the pdf decision). The
 * store is read once at the start (the leader may be done already), then when the leader's own
 * outcome is published without one for this output, and every 2 s. Null when nothing came in time.
 */
export async function waitForLeader(deps: Deps, ctx: TaskContext, output: Output, leader: Output): Promise<Entry | 'browser' | null> {
  const { task } = ctx;
  const st = await deps.store(task.store);
  const c = deps.config;
  const limit = Date.now() + c.websitepro.fetchTimeoutMs + c.shots.pageTimeoutMs + 2 * c.websitepro.convertTimeoutMs + 10000;
  let lastBeat = Date.now();
  let mine: Entry | null = null;
  let leaderDone = 0;
  let wake: (() => void) | null = null;
  const sub = deps.nc.subscribe(subjects.result(task.jobId), {
    callback: (_err, m) => {
      let o: Outcome;
      try {
        o = m.json<Outcome>();
      } catch {
        return;
      }
      const extra = o.kind === 'done' || o.kind === 'failed' ? (o.extra ? { extra: o.extra } : {}) : {};
      if (o.kind === 'done' && o.resultKey === output) mine = { ...(o.file ? { file: o.file } : { done: true as const }), ...extra };
      else if (o.kind === 'failed' && o.resultKey === output) mine = { error: o.error, message: o.message ?? o.error, ...extra };
      else if ((o.kind === 'done' || o.kind === 'failed') && o.resultKey === leader) leaderDone++;
      else return;
      wake?.();
    },
  });
  try {
    let lookups = 0;
    while (Date.now() < limit && !ctx.signal.aborted) {
      const seen = leaderDone;
      if (mine) return mine;
      // a result with facts or without a file is told by the outcome or the index only
      const file = hasFacts(task) || output === 'render' ? null : await storedFile(st, task, output);
      if (file) return file;
      // the index exists only when an output failed or a pdf is decided: not worth a request on the
      // first look, when the leader has most likely not finished
      if (lookups++ > 0 || output === 'pdf') {
        const index = await readIndex(st, task.jobId);
        const e = index ? (output === 'pdf' ? index.pdf : index.outputs[output]) : undefined;
        if (e) return e;
      }
      if (mine) return mine;
      if (Date.now() - lastBeat > 5000) {
        lastBeat = Date.now();
        await ctx.progress('waiting for the page to be fetched');
      }
      if (leaderDone !== seen) continue;
      await new Promise<void>((r) => {
        const timer = setTimeout(r, 2000);
        wake = () => {
          clearTimeout(timer);
          r();
        };
      });
      wake = null;
    }
    return mine;
  } finally {
    sub.unsubscribe();
  }
}
