// A wallet's share of the workers and of the queue (issue 44 item 1; docs/decisions.md "Fair shares").
// Every task carries its wallet in its subject (`task.w.<wallet>.<kind>`, shared/names.ts), so the
// TASKS stream itself says how many a wallet has: one subject-filtered stream info, no counter that
// could drift from what is there. A wallet has at most `limits.walletTasks` tasks of each worker kind
// (converter, one browser version's pool, relay-prober, compare) that workers may take: a share of
// each pool, so a lone customer still uses every pool at once. Its tasks past that wait in TASKS on
// a subject no worker's filter reaches
// (`task.w.<wallet>.held.<kind>`), in the order they came, and the supervisor moves them over as the
// wallet's own tasks finish (actors/job-supervisor/release.ts). Workers still take what they may
// in the order it came: a wallet's backlog is held, not queued before another wallet's task.
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { Config } from '../config/index.ts';
import { STREAMS, subjects, token } from '../names.ts';
import { taskMsgId, type Task } from '../protocol/jobs.ts';

/** A wallet's tasks in TASKS now: those workers may take (or have), and those held past its share. */
export interface WalletTasks {
  taken: number;
  held: number;
  /** The same per worker kind (the kind subject without `task.`: `websitepro`, `shots.chromium.156`). */
  byKind: Map<string, { taken: number; held: number }>;
}

const heldPrefix = (walletId: string) => `task.w.${token(walletId)}.held.`;

/** Counted from the stream: one stream info filtered on the wallet's subjects. */
export async function walletTasks(jsm: JetStreamManager, walletId: string): Promise<WalletTasks> {
  const info = await jsm.streams.info(STREAMS.tasks, { subjects_filter: subjects.tasksOfWallet(walletId) });
  const held = heldPrefix(walletId);
  const out: WalletTasks = { taken: 0, held: 0, byKind: new Map() };
  for (const [s, n] of Object.entries(info.state.subjects ?? {})) {
    const isHeld = s.startsWith(held);
    const kind = kindOfSubject(s);
    const k = out.byKind.get(kind) ?? out.byKind.set(kind, { taken: 0, held: 0 }).get(kind)!;
    if (isHeld) {
      out.held += n;
      k.held += n;
    } else {
      out.taken += n;
      k.taken += n;
    }
  }
  return out;
}

/** The worker kind of a wallet's task subject, taken or held (`task.w.<w>.held.shots.x.y` → `shots.x.y`). */
export const kindOfSubject = (subject: string) => {
  const s = subject.split('.');
  return s.slice(s[3] === 'held' ? 4 : 3).join('.');
};
/** The worker kind of a plan's subject (`task.websitepro` → `websitepro`). */
export const kindOf = (kindSubject: string) => (kindSubject.startsWith('task.') ? kindSubject.slice(5) : kindSubject);

/** How many more tasks of this kind of this wallet workers may have now (`limits.walletTasks` less those it has). */
export const freeOf = (config: Config, w: WalletTasks, kind: string) =>
  Math.max(0, config.limits.walletTasks - (w.byKind.get(kindOf(kind))?.taken ?? 0));

/** How many more tasks of this kind the wallet may have in TASKS for workers to take now. */
export async function freeShare(jsm: JetStreamManager, config: Config, walletId: string, kind: string): Promise<number> {
  return freeOf(config, await walletTasks(jsm, walletId), kind);
}

/** The wallets with held tasks now (their subject tokens: a wallet id is its own token). */
export async function walletsWithHeld(jsm: JetStreamManager): Promise<string[]> {
  const info = await jsm.streams.info(STREAMS.tasks, { subjects_filter: subjects.tasksHeldAll });
  return [...new Set(Object.keys(info.state.subjects ?? {}).map((s) => s.split('.')[2]!))];
}

/** Message id of a held task: apart from the task's own, so its later publish to workers is not taken for a repeat. */
export const heldMsgId = (jobId: string, resultKey: string) => `held:${taskMsgId(jobId, resultKey)}`;

export interface SharedPublish {
  /** Tasks workers may take, by result key, with their stream sequence (a repeat's: the first publish's). */
  taken: Map<string, number>;
  /** Tasks held past the share, by result key, with their stream sequence (none for a repeat: it may have moved). */
  held: Map<string, number>;
}

/**
 * Publish one wallet's tasks: per kind, the first ones its free share allows to workers, the rest
 * held. `counts`: the wallet's tasks as counted a moment ago (a task that finished since only frees
 * more); undefined: counted now. Two admissions of one wallet at the same moment may both see the
 * same free share (the bound is then passed by the tasks of the one admitted second, never more).
 */
export async function publishShared(
  js: JetStreamClient,
  jsm: JetStreamManager,
  config: Config,
  walletId: string,
  tasks: { kind: string; task: Task }[],
  opts: { timeoutMs?: number; counts?: WalletTasks } = {},
): Promise<SharedPublish> {
  const out: SharedPublish = { taken: new Map(), held: new Map() };
  if (!tasks.length) return out;
  const counts = opts.counts ?? (await walletTasks(jsm, walletId));
  const free = new Map<string, number>();
  const takes = tasks.map(({ kind }) => {
    const k = kindOf(kind);
    const left = free.get(k) ?? freeOf(config, counts, k);
    free.set(k, Math.max(0, left - 1));
    return left > 0;
  });
  // independent writes: sent together, a job with several results waits for one round, not several
  await Promise.all(
    tasks.map(async ({ kind, task }, i) => {
      const take = takes[i]!;
      const ack = await js.publish(take ? subjects.taskOfWallet(kind, walletId) : subjects.taskHeld(kind, walletId), JSON.stringify(task), {
        msgID: take ? taskMsgId(task.jobId, task.resultKey) : heldMsgId(task.jobId, task.resultKey),
        ...(opts.timeoutMs ? { timeout: opts.timeoutMs } : {}),
      });
      // A repeat (a dispatch again after a crash between its publish and its mark) is answered with
      // the first publish's sequence: kept for a task workers may take, so the backstops that remove
      // a result's task find it; not for a held one, which release.ts may have moved since.
      if (!ack.duplicate || take) (take ? out.taken : out.held).set(task.resultKey, ack.seq);
    }),
  );
  return out;
}

/** The kind subject a held task's subject stands for (`task.w.<wallet>.held.shots.x.y` → `task.shots.x.y`). */
export const kindOfHeld = (subject: string) => `task.${subject.split('.').slice(4).join('.')}`;
