// The wallet's share (shared/jobs/share.ts), the supervisor's side: a worker's finished task leaves
// TASKS when its outcome is recorded, and the wallet's held tasks go to workers, oldest first, as far
// as its share is free. One step, called after every final outcome and by the sweep for every
// wallet with held tasks.
//
// Crash safety: a held task is published to workers (its own task message id), then its result's
// `taskSeq` is pointed at the new message, then the held message is deleted. A crash between two
// of these leaves the held message, and the next release of that wallet (an outcome, or the sweep)
// does the same again: the publish is a duplicate within the TASKS dedupe window, the pointer is
// written once, the delete finds the message. Past the window the task would be worked twice at
// worst, and the first outcome is the one recorded.
import type { MsgRequest } from '@nats-io/jetstream';
import { STREAMS, subjects } from '../../shared/names.ts';
import { taskMsgId, type Outcome, type Task } from '../../shared/protocol/jobs.ts';
import { freeOf, kindOfHeld, walletTasks } from '../../shared/jobs/share.ts';
import { readJob, updateJob } from '../../shared/jobs/store.ts';
import type { Deps } from './steps.ts';

const gone = (e: unknown) => /no message found|not found/i.test(String((e as Error)?.message));

/** Releases in progress per wallet in this instance: one at a time, and one more if asked meanwhile. */
const running = new WeakMap<Deps, Map<string, { again: boolean; done: Promise<void> }>>();

/**
 * After a final outcome is recorded: its task leaves TASKS (the worker's ack would remove it a moment
 * later; the share must not count it meanwhile), then the wallet's held tasks are released.
 */
export async function afterOutcome(d: Deps, o: Outcome): Promise<void> {
  if (o.kind !== 'done' && o.kind !== 'failed') return;
  const job = d.copyOf?.(o.jobId)?.job ?? (await readJob(d.jobs, o.jobId))?.job;
  // the worker's own task, or (an outcome a worker reported for another task of the job, as
  // websitepro's leader does, or the supervisor's worker_lost) the message the result points at
  const seq = o.taskSeq ?? job?.results.find((r) => r.key === o.resultKey)?.taskSeq;
  if (seq) await d.jsm.streams.deleteMessage(STREAMS.tasks, seq, false).catch((e) => (gone(e) ? false : Promise.reject(e)));
  if (job) await releaseHeld(d, job.walletId);
}

/** Release the wallet's held tasks as far as its share allows; serialised per wallet in this instance. */
export function releaseHeld(d: Deps, walletId: string): Promise<void> {
  let mine = running.get(d);
  if (!mine) running.set(d, (mine = new Map()));
  const cur = mine.get(walletId);
  if (cur) {
    // a task finished while this wallet's release runs: one more pass after it
    cur.again = true;
    return cur.done;
  }
  const entry = { again: false, done: Promise.resolve() };
  entry.done = (async () => {
    try {
      do {
        entry.again = false;
        await releaseOnce(d, walletId);
      } while (entry.again);
    } finally {
      mine.delete(walletId);
    }
  })();
  mine.set(walletId, entry);
  return entry.done;
}

async function releaseOnce(d: Deps, walletId: string): Promise<void> {
  const counts = await walletTasks(d.jsm, walletId);
  if (!counts.held) return;
  /** Per job: result key → the new task's sequence; and the held messages done with. */
  const moved = new Map<string, Map<string, number>>();
  const doneWith: number[] = [];
  // each worker kind has its own share: its held tasks go as far as its own free share allows
  for (const [kind, k] of counts.byKind) {
    const free = freeOf(d.config, counts, kind);
    if (k.held && free) await releaseKind(d, walletId, kind, free, moved, doneWith);
  }
  // the result's pointer follows its task, so a backstop that removes it removes the one workers see
  for (const [jobId, seqs] of moved) {
    await updateJob(d.jobs, jobId, (j) => {
      let changed = false;
      for (const r of j.results) {
        const seq = seqs.get(r.key);
        if (r.status !== 'pending' || seq === undefined || r.taskSeq === seq) continue;
        r.taskSeq = seq;
        changed = true;
      }
      return changed;
    });
  }
  for (const seq of doneWith)
    await d.jsm.streams.deleteMessage(STREAMS.tasks, seq, false).catch((e) => (gone(e) ? false : Promise.reject(e)));
}

/** Publish up to `free` of the wallet's held tasks of one kind to workers, oldest first. */
async function releaseKind(
  d: Deps,
  walletId: string,
  kind: string,
  free: number,
  moved: Map<string, Map<string, number>>,
  doneWith: number[],
): Promise<void> {
  const graceMs = d.config.wallet.orphanChargeGraceSeconds * 1000;
  let from = 0;
  while (free > 0) {
    // the first held message of this kind at or after `from` (the server takes next_by_subj; the
    // client's type names only seq and last_by_subj)
    const next = { next_by_subj: subjects.taskHeld(kind, walletId), seq: from } as unknown as MsgRequest;
    const sm = await d.jsm.streams.getMessage(STREAMS.tasks, next);
    if (!sm) break;
    from = sm.seq + 1;
    let task: Task;
    try {
      task = sm.json<Task>();
    } catch {
      doneWith.push(sm.seq); // not a task: nothing to release
      continue;
    }
    // the projection's copy is enough to skip a result that is no longer pending (none goes back)
    const job = d.copyOf?.(task.jobId)?.job ?? (await readJob(d.jobs, task.jobId))?.job;
    if (!job) {
      // a creation in flight writes its document within the orphan grace, or never
      if (Date.now() - sm.time.getTime() > graceMs) doneWith.push(sm.seq);
      continue;
    }
    const r = job.results.find((x) => x.key === task.resultKey);
    if (!r || r.status !== 'pending') {
      doneWith.push(sm.seq);
      continue;
    }
    const ack = await d.js.publish(subjects.taskOfWallet(kindOfHeld(sm.subject), walletId), sm.data, {
      msgID: taskMsgId(task.jobId, task.resultKey),
    });
    (moved.get(task.jobId) ?? moved.set(task.jobId, new Map()).get(task.jobId)!).set(task.resultKey, ack.seq);
    doneWith.push(sm.seq);
    free--;
  }
}
