// How the audit (shared/audit.ts) reads: every LEDGER entry in sequence order and each bucket's
// current values, bounded by a deadline that is kept to the moment (nothing waits past it: not a
// read in flight, not a retry), and fast when the streams are healthy.
//
// Two ways to read, chosen per stream from its leader's stream info:
// - an ordered consumer (one server-side cursor streaming batches of 1,000: thousands of entries
//   per second where one get per entry made 200-5,000) when every replica of the stream is current;
// - leader gets, one message or key at a time (STREAM.MSG.GET), READ_CONCURRENCY in flight, when a
//   replica is offline or lagging, or when the consumer stops delivering (STALL_MS). On a cluster
//   with a node down an ephemeral consumer can be placed on, or wait for, the dead peer (issue 19),
//   while a leader read answers as soon as a majority has elected one. The gets go on from the
//   first sequence (or key) the consumer did not deliver.
// nats-server 2.10 has no batched direct get (`batch`, ADR-31, is 2.11), and LEDGER and the
// buckets answer direct gets only on one replica, so a consumer is the fast way.
import {
  jetstream,
  jetstreamManager,
  DeliverPolicy,
  JetStreamApiError,
  type JetStreamManager,
  type JsMsg,
  type OrderedConsumerOptions,
  type StreamInfo,
} from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { isTransientNatsError } from './nats/transient.ts';
import { leaderHeardMajority } from './nats/connect.ts';

export const READ_CONCURRENCY = 32;
// One read is one small message from a leader. Right after a leader is lost the first reads go
// unanswered until a new one is elected (5-8 s, longer under load); with 2 s a read tried again
// follows the election closely.
export const READ_TIMEOUT_MS = 2000;
/** A consumer that delivers nothing for this long (placed on a dead or lagging peer) is left for leader gets. */
export const STALL_MS = 3000;
/** A leader get that keeps failing on an outage is tried again for this long (an election) before the read fails. */
const READ_RETRY_MS = 10_000;
const BATCH = 1000;

/** The reads ran out of time: what was read of what. */
export class AuditIncomplete extends Error {
  readonly what: string;
  readonly done: number;
  readonly total: number;
  constructor(what: string, done: number, total: number, detail = '') {
    super(`read ${done} of ${total < 0 ? 'an unknown number of' : total} ${what} before the deadline${detail}`);
    this.what = what;
    this.done = done;
    this.total = total;
    this.name = 'AuditIncomplete';
  }
}

/** The deadline came: internal, turned into AuditIncomplete with the progress by the reader that met it. */
class DeadlineReached extends Error {}

/** `p`, or a DeadlineReached rejection at `deadline`, whichever comes first (`p` is left to settle unobserved). */
function byDeadline<T>(p: Promise<T>, deadline: number): Promise<T> {
  if (deadline === Infinity) return p;
  p.catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineReached()), Math.max(0, deadline - Date.now()));
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** How long a read waits for a stream info from a leader that has heard from a majority lately. */
const FRESH_INFO_MS = 10_000;

/**
 * The stream's info, from a leader that has heard from a majority of its replicas lately; asked
 * again (every 250 ms, for up to FRESH_INFO_MS or the deadline) while it has not. Right after a
 * partition heals, a node cut off while it led the stream can still answer as its leader, with the
 * last sequence it had when it was cut off: a read to that sequence missed every entry written
 * during the fault (issue 45, session 31: a charge of every job created during a 2/1 split missing
 * from a ledger read made right after the heal; the next read found them).
 */
async function freshInfo(jsm: JetStreamManager, stream: string, by: number, opts?: { subjects_filter?: string }): Promise<StreamInfo> {
  const giveUp = Math.min(by, Date.now() + FRESH_INFO_MS);
  for (;;) {
    const si = await byDeadline(opts ? jsm.streams.info(stream, opts) : jsm.streams.info(stream), by);
    if (leaderHeardMajority(si.cluster?.replicas ?? []) || Date.now() + 250 >= giveUp) return si;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Whether the stream's replicas are all current (a single server: always): then a consumer is safe to use. */
const healthy = (si: StreamInfo) => (si.cluster?.replicas ?? []).every((r) => r.current && !r.offline);

/**
 * Read `stream` with an ordered consumer, handing each message to `take` (true: the last one
 * wanted). Ends 'done', 'deadline' (stopped at the deadline) or 'stalled' (nothing delivered for
 * STALL_MS, or the consumer failed on an outage): the caller goes on with leader gets.
 */
async function consumeOrdered(
  nc: NatsConnection,
  stream: string,
  opts: Partial<OrderedConsumerOptions>,
  take: (m: JsMsg) => boolean,
  deadline: number,
  stallMs: number,
): Promise<'done' | 'deadline' | 'stalled'> {
  let reason: 'done' | 'deadline' | 'stalled' | undefined;
  let stopMsgs = () => {};
  let wake = () => {};
  const stopped = new Promise<void>((r) => {
    wake = r;
  });
  const stop = (why: 'done' | 'deadline' | 'stalled') => {
    if (!reason) {
      reason = why;
      stopMsgs();
      wake();
    }
  };
  let last = Date.now();
  const watch = setInterval(
    () => {
      if (Date.now() >= deadline) stop('deadline');
      else if (Date.now() - last > stallMs) stop('stalled');
    },
    Math.min(100, stallMs),
  );
  try {
    const c = await jetstream(nc, { timeout: READ_TIMEOUT_MS }).consumers.get(stream, opts);
    const started = c.consume({ max_messages: BATCH });
    const msgs = await Promise.race([started, stopped.then(() => null)]);
    if (!msgs) {
      started.then(
        (m) => m.stop(),
        () => {},
      );
      return reason!;
    }
    stopMsgs = () => msgs.stop();
    if (reason) {
      msgs.stop();
      return reason;
    }
    for await (const m of msgs) {
      last = Date.now();
      // buffered messages come as microtasks, which hold timers off: the deadline is checked here too
      if (last >= deadline) {
        stop('deadline');
        break;
      }
      if (take(m)) {
        stop('done');
        break;
      }
      if (reason) break;
    }
    return reason ?? 'stalled';
  } catch (e) {
    if (reason) return reason;
    if (isTransientNatsError(e)) return 'stalled';
    throw e;
  } finally {
    clearInterval(watch);
    stopMsgs();
  }
}

/**
 * `f` over `items` with READ_CONCURRENCY in flight, results in order. A failing item is tried again
 * on an outage for READ_RETRY_MS; any other failure stops every lane (none reads on behind a failed
 * read). At `deadline` it stops at once (reads in flight are not waited for) with DeadlineReached;
 * `progress.done` counts the items read.
 */
async function readEach<T, R>(items: T[], f: (item: T) => Promise<R>, deadline: number, progress: { done: number }): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  let failed = false;
  const one = async (item: T): Promise<R> => {
    const giveUp = Date.now() + READ_RETRY_MS;
    for (let wait = 250; ; wait = Math.min(wait * 2, 1000)) {
      try {
        return await f(item);
      } catch (e) {
        if (failed || !isTransientNatsError(e) || Date.now() + wait > Math.min(giveUp, deadline)) throw e;
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  };
  const lane = async () => {
    while (next < items.length && !failed) {
      if (Date.now() >= deadline) throw new DeadlineReached();
      const i = next++;
      out[i] = await one(items[i]!);
      progress.done++;
    }
  };
  const all = Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, items.length) }, lane));
  try {
    await byDeadline(all, deadline);
  } catch (e) {
    failed = true;
    throw e;
  }
  return out;
}

/** A stored message as both ways of reading give it. */
/** `f` over `items` as the leader gets are made (see readEach); at `deadline`, AuditIncomplete saying how many of the `what` were read. */
export async function readAll<T, R>(items: T[], f: (item: T) => Promise<R>, deadline: number, what: string): Promise<R[]> {
  const progress = { done: 0 };
  try {
    return await readEach(items, f, deadline, progress);
  } catch (e) {
    if (e instanceof DeadlineReached) throw new AuditIncomplete(what, progress.done, items.length);
    throw e;
  }
}

export interface StoredEntry {
  seq: number;
  subject: string;
  json<T>(): T;
}

export interface ReadOptions {
  /** Stop reading at this time (epoch ms): AuditIncomplete says how far the reads got. */
  deadline?: number;
  /** Use an ordered consumer when the stream's replicas are all current (default), or leader gets only. */
  consumer?: boolean;
  /** Test hook: how long a consumer may deliver nothing before the reads go on with leader gets. */
  stallMs?: number;
}

/**
 * The first requests (the stream's info, which says how much there is to read) may take this long
 * even past a deadline that has come already: "read 0 of N" says more than "of an unknown number".
 */
const INFO_GRACE_MS = 500;
const infoDeadline = (deadline: number) => Math.max(deadline, Date.now() + INFO_GRACE_MS);

async function manager(nc: NatsConnection, deadline: number, what: string): Promise<JetStreamManager> {
  try {
    return await byDeadline(jetstreamManager(nc, { timeout: READ_TIMEOUT_MS, checkAPI: false }), deadline);
  } catch (e) {
    if (e instanceof DeadlineReached) throw new AuditIncomplete(what, 0, -1);
    throw e;
  }
}

/** Every message of `stream` from its first to its last sequence as of the start, in order, each through `parse` as it comes. */
export async function readStream<R>(
  nc: NatsConnection,
  stream: string,
  what: string,
  parse: (m: StoredEntry) => R,
  o: ReadOptions = {},
): Promise<R[]> {
  const deadline = o.deadline ?? Infinity;
  const infoBy = infoDeadline(deadline);
  const jsm = await manager(nc, infoBy, what);
  const out: R[] = [];
  let total = -1;
  let next = 0;
  let last = 0;
  const progress = { done: 0 };
  try {
    const si = await freshInfo(jsm, stream, Math.max(infoBy, Math.min(deadline, Date.now() + FRESH_INFO_MS)));
    total = si.state.messages;
    if (total === 0) return [];
    next = si.state.first_seq;
    last = si.state.last_seq;
    if (o.consumer !== false && healthy(si)) {
      const how = await consumeOrdered(
        nc,
        stream,
        { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: next },
        (m) => {
          if (m.seq > last) return true; // written after the start: not ours
          out.push(parse(m));
          next = m.seq + 1;
          return m.seq >= last || m.info.pending === 0;
        },
        deadline,
        o.stallMs ?? STALL_MS,
      );
      if (how === 'deadline') throw new DeadlineReached();
      // 'done' on `pending === 0` short of `last`: the consumer sits on a replica still catching up
      // (after a partition heals): the rest by leader gets
      if (how === 'done' && next > last) return out;
    }
    // leader gets from the first sequence not read (a gap, a deleted sequence, is skipped)
    const seqs = Array.from({ length: Math.max(0, last - next + 1) }, (_, i) => next + i);
    const got = await readEach(
      seqs,
      (seq) =>
        jsm.streams.getMessage(stream, { seq }).catch((e: unknown) => {
          if (e instanceof JetStreamApiError && e.code === 10037) return null; // no message at this sequence
          throw e;
        }),
      deadline,
      progress,
    );
    for (const m of got) if (m) out.push(parse(m));
    return out;
  } catch (e) {
    if (!(e instanceof DeadlineReached)) throw e;
    const inOrder = out.length ? `in order up to sequence ${next - 1} of ${last}` : '';
    const byGets = progress.done ? `${progress.done} by leader gets` : '';
    const detail = [inOrder, byGets].filter(Boolean).join(', then ');
    throw new AuditIncomplete(what, out.length + progress.done, total, detail ? ` (${detail})` : '');
  }
}

/** Every live key of a bucket: the subjects its stream holds, from the leader's stream info. */
export async function bucketKeys(nc: NatsConnection, bucket: string, deadline = Infinity): Promise<string[]> {
  const jsm = await byDeadline(jetstreamManager(nc, { timeout: READ_TIMEOUT_MS, checkAPI: false }), deadline);
  const prefix = `$KV.${bucket}.`;
  const info = await freshInfo(jsm, `KV_${bucket}`, deadline, { subjects_filter: `${prefix}>` });
  return Object.keys(info.state.subjects ?? {}).map((s) => s.slice(prefix.length));
}

/** Each key's current value of a bucket (deleted keys left out), optionally only the keys `filter` takes. */
export async function readBucket<T>(
  nc: NatsConnection,
  bucket: string,
  filter?: (key: string) => boolean,
  o: ReadOptions = {},
): Promise<Map<string, T>> {
  const deadline = o.deadline ?? Infinity;
  const what = `${bucket} documents`;
  const infoBy = infoDeadline(deadline);
  const jsm = await manager(nc, infoBy, what);
  const prefix = `$KV.${bucket}.`;
  const out = new Map<string, T>();
  const seen = new Set<string>();
  let total = -1;
  const progress = { done: 0 };
  try {
    const si = await freshInfo(jsm, `KV_${bucket}`, Math.max(infoBy, Math.min(deadline, Date.now() + FRESH_INFO_MS)));
    if (si.state.messages === 0) return out;
    total = si.state.num_subjects ?? -1;
    if (o.consumer !== false && healthy(si)) {
      // each key's last value, in stream order
      let upTo = 0;
      const how = await consumeOrdered(
        nc,
        `KV_${bucket}`,
        { filter_subjects: [`${prefix}>`], deliver_policy: DeliverPolicy.LastPerSubject },
        (m) => {
          upTo = Math.max(upTo, m.seq);
          const key = m.subject.slice(prefix.length);
          seen.add(key);
          const op = m.headers?.get('KV-Operation');
          if ((!filter || filter(key)) && !op && m.data.length) out.set(key, m.json<T>());
          return m.info.pending === 0;
        },
        deadline,
        o.stallMs ?? STALL_MS,
      );
      if (how === 'deadline') throw new DeadlineReached();
      if (how === 'done' && upTo >= si.state.last_seq) return out;
      // The stream's last message is the last value of its key, so a complete read delivers it.
      // Short of it, the ephemeral consumer sits on a replica still catching up after a partition
      // healed (issue 45: the audit right after a heal missed every top-up written during the
      // fault, the next audit found them all): its values may be old too, so every key by leader gets
      if (how === 'done') {
        seen.clear();
        out.clear();
      }
    }
    // leader gets of the keys the consumer did not deliver
    const kv = await byDeadline(new Kvm(jetstream(nc, { timeout: READ_TIMEOUT_MS })).open(bucket), deadline);
    const keys = (await bucketKeys(nc, bucket, deadline)).filter((k) => !seen.has(k) && (!filter || filter(k))).sort();
    const values = await readEach(keys, (k) => kv.get(k), deadline, progress);
    keys.forEach((k, i) => {
      const e = values[i];
      if (e && e.operation === 'PUT' && e.value.length) out.set(k, e.json<T>());
    });
    return out;
  } catch (e) {
    if (!(e instanceof DeadlineReached)) throw e;
    throw new AuditIncomplete(what, seen.size + progress.done, total);
  }
}
