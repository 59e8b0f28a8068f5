// A wallet's share of the workers and of the queue (issue 44 item 1; docs/decisions.md "Fair shares").
// Every task carries its wallet in its subject (`task.w.<wallet>.<kind>`, shared/names.ts), so the
// TASKS stream itself says how many a wallet has: one subject-filtered stream info, no counter that
// could drift from what is there. A wallet has at most `limits.walletTasks` tasks workers may take;
// its tasks past that wait in TASKS on a subject no worker's filter reaches
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
}

const heldPrefix = (walletId: string) => `task.w.${token(walletId)}.held.`;

/** Counted from the stream: one stream info filtered on the wallet's subjects. */
export async function walletTasks(jsm: JetStreamManager, walletId: string): Promise<WalletTasks> {
  const info = await jsm.streams.info(STREAMS.tasks, { subjects_filter: subjects.tasksOfWallet(walletId) });
  const held = heldPrefix(walletId);
  const out = { taken: 0, held: 0 };
  for (const [s, n] of Object.entries(info.state.subjects ?? {})) {
    if (s.startsWith(held)) out.held += n;
    else out.taken += n;
  }
  return out;
}

/** How many more tasks of this wallet workers may have now (`limits.walletTasks` less those it has). */
export const freeOf = (config: Config, w: WalletTasks) => Math.max(0, config.limits.walletTasks - w.taken);

/** How many more tasks the wallet may have in TASKS for workers to take now. */
export async function freeShare(jsm: JetStreamManager, config: Config, walletId: string): Promise<number> {
  return freeOf(config, await walletTasks(jsm, walletId));
}

/** The wallets with held tasks now (their subject tokens: a wallet id is its own token). */
export async function walletsWithHeld(jsm: JetStreamManager): Promise<string[]> {
  const info = await jsm.streams.info(STREAMS.tasks, { subjects_filter: subjects.tasksHeldAll });
  return [...new Set(Object.keys(info.state.subjects ?? {}).map((s) => s.split('.')[2]!))];
}

/** Message id of a held task: apart from the task's own, so its later publish to workers is not taken for a repeat. */
export const heldMsgId = (jobId: string, resultKey: string) => `held:${taskMsgId(jobId, resultKey)}`;

export interface SharedPublish {
  /** Tasks workers may take, by result key, with their stream sequence (none for a repeat). */
  taken: Map<string, number>;
  /** Tasks held past the share, by result key, with their stream sequence (none for a repeat). */
  held: Map<string, number>;
}

/**
 * Publish one wallet's tasks: the first `free` to workers, the rest held. `free` undefined: counted
 * now. Two admissions of one wallet at the same moment may both see the same free share (the bound
 * is then passed by the tasks of the one admitted second, never more than that).
 */
export async function publishShared(
  js: JetStreamClient,
  jsm: JetStreamManager,
  config: Config,
  walletId: string,
  tasks: { kind: string; task: Task }[],
  opts: { timeoutMs?: number; free?: number } = {},
): Promise<SharedPublish> {
  const out: SharedPublish = { taken: new Map(), held: new Map() };
  if (!tasks.length) return out;
  const free = opts.free ?? (await freeShare(jsm, config, walletId));
  // independent writes: sent together, a job with several results waits for one round, not several
  await Promise.all(
    tasks.map(async ({ kind, task }, i) => {
      const take = i < free;
      const ack = await js.publish(take ? subjects.taskOfWallet(kind, walletId) : subjects.taskHeld(kind, walletId), JSON.stringify(task), {
        msgID: take ? taskMsgId(task.jobId, task.resultKey) : heldMsgId(task.jobId, task.resultKey),
        ...(opts.timeoutMs ? { timeout: opts.timeoutMs } : {}),
      });
      if (!ack.duplicate) (take ? out.taken : out.held).set(task.resultKey, ack.seq);
    }),
  );
  return out;
}

/** The kind subject a held task's subject stands for (`task.w.<wallet>.held.shots.x.y` → `task.shots.x.y`). */
export const kindOfHeld = (subject: string) => `task.${subject.split('.').slice(4).join('.')}`;
