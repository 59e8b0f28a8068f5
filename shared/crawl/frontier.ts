// A crawl's frontier and visited set in NATS, so they survive the restart of any one process and two
// coordinators can never both admit a URL (STYLE.md: "a request queue is the crawl's memory").
//
//   await Frontier.open(nc, {replicas, maxAgeMs})
//   frontier.admit(jobId, {url, depth, from}, limit)  → {ok: true, n, seq} | {ok: false, reason}
//   frontier.admitMany(jobId, items, limit)           → the same for a page's links, in one pass
//   frontier.pending(jobId, max)                      → {cursor, entries}   the next entries not yet taken
//   frontier.tail(jobId)                              → {seq, n} of the last admitted entry
//   frontier.commit(jobId, cursor, lastSeq)           → true, or false when another coordinator took them first
//   frontier.counts(jobId)                            → {admitted, taken}
//   frontier.drop(jobId)                              at the crawl's end: its keys and entries go
//
// Where things are:
// - visited set: bucket `crawl_visited`, key `<jobId>.<40 hex of sha256(uniqueKey)>`, created with
//   create-if-absent. Its value says `admitting` (this coordinator is publishing it), `queued` (in the
//   frontier) or `limit` (lost the race for the last slot). A duplicate link costs one read, and none
//   once this process has seen its key `queued` or `canonical` (a bounded memo: a key never leaves them);
// - frontier: stream `CRAWL_FRONTIER`, subject `frontier.<jobId>`, one message per admitted URL, each
//   carrying its ordinal `n`. Every publish expects the subject's last sequence (a compare-and-set), so
//   the ordinals are dense and `n <= limit` holds across coordinators: the admission count and the queue
//   are one write. The message id `<jobId>:<hash>` makes a retried publish (a coordinator that died between
//   its visited entry and its publish, then redelivered) land once;
// Both are provisioned by shared/nats/provision.ts (the age of a page set's results).
// - cursor: key `<jobId>.cursor` in the same bucket, `{seq, n}` of the last entry handed to the task queue,
//   moved by compare-and-set. A coordinator publishes the tasks of `pending()` first (their message ids
//   make a second publish harmless), then `commit()`s: a crash in between hands the same pages out again,
//   never loses one. The job-supervisor keeps its cursor in the job document instead (`pageSet.crawl.taken`,
//   written with the pages it takes: one write less per step, session 32) and reads this key only for a
//   crawl started before; `pendingAfter` reads on from either.
// Bounds: a crawl's keys and messages are at most `limit` (+ the cursor and the rare `limit` entries of a
// race); nothing is written for a URL once the crawl is full (the count is read first). Both the bucket
// and the stream have a max age (a backstop; `drop` removes a finished crawl's at once).
import { createHash } from 'node:crypto';
import { JetStreamApiError, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { BUCKETS, STREAMS, subjects } from '../names.ts';
import { uniqueKey } from './normalize.ts';

export const FRONTIER_STREAM = STREAMS.crawlFrontier;
export const VISITED_BUCKET = BUCKETS.crawlVisited;
export const frontierSubject = subjects.crawlFrontier;

export interface FrontierEntry {
  url: string;
  uniqueKey: string;
  depth: number;
  /** The page it was found on (absent for the start URL and sitemap URLs). */
  from?: string;
  /** Ordinal among the crawl's admitted URLs, 1..limit. */
  n: number;
}

/** A URL to admit: its depth and the page it was found on (absent for the start URL and sitemap URLs). */
export interface AdmitItem {
  url: string;
  depth: number;
  from?: string;
}

export type AdmitResult = { ok: true; n: number; seq: number } | { ok: false; reason: 'duplicate' | 'limit' | 'bad_url' };

interface Visited {
  /** `canonical`: named by page `i`'s rel=canonical, never admitted (claimCanonical). */
  st: 'admitting' | 'queued' | 'limit' | 'canonical';
  at: number;
  i?: number;
}

export interface Cursor {
  seq: number;
  n: number;
  /** The cursor key's revision (0: none yet). */
  revision: number;
}

const hashOf = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 40);
const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const CONFLICT = new Set([10071, 10158, 10163]);
const isConflict = (e: unknown) =>
  (e instanceof JetStreamApiError && CONFLICT.has(e.code)) || /wrong last sequence|key exists/i.test(String((e as Error)?.message));

/** Visited keys known to be `queued` or `canonical`, per crawl, held at most (the oldest crawl's go first). */
export const KNOWN_VISITED_MAX = 200_000;

export class Frontier {
  private readonly js: JetStreamClient;
  private readonly jsm: JetStreamManager;
  private readonly kv: KV;
  /**
   * Per crawl, the visited keys this process saw `queued` or `canonical` (or marked so): a key never
   * leaves either state while its crawl runs (only `drop` removes it), so a link to one is a duplicate
   * without a read. Most links of a site point to pages it has already: one read less per such link.
   */
  private readonly known = new Map<string, Set<string>>();
  private knownCount = 0;

  private constructor(js: JetStreamClient, jsm: JetStreamManager, kv: KV) {
    this.js = js;
    this.jsm = jsm;
    this.kv = kv;
  }

  /**
   * Open the bucket and the stream. shared/nats/provision.ts creates them with the service's retention;
   * created here only if absent (the library's own tests, which do not provision).
   */
  static async open(nc: NatsConnection, o: { replicas?: number; maxAgeMs?: number } = {}): Promise<Frontier> {
    const replicas = o.replicas ?? 1;
    const maxAgeMs = o.maxAgeMs ?? 8 * 24 * 3600 * 1000;
    const jsm = await jetstreamManager(nc);
    try {
      await jsm.streams.info(FRONTIER_STREAM);
    } catch (e) {
      if (!/stream not found/i.test(String((e as Error).message))) throw e;
      await jsm.streams
        .add({
          name: FRONTIER_STREAM,
          subjects: [subjects.crawlFrontierAll],
          max_age: maxAgeMs * 1_000_000,
          num_replicas: replicas,
          duplicate_window: 10 * 60 * 1_000_000_000,
        })
        .catch((err: Error) => {
          if (!/already in use|exists/i.test(err.message)) throw err;
        });
    }
    const kvm = new Kvm(nc);
    const kv = await jsm.streams
      .info(`KV_${VISITED_BUCKET}`)
      .then(() => kvm.open(VISITED_BUCKET))
      .catch((e: Error) => {
        if (!/stream not found/i.test(e.message)) throw e;
        return kvm.create(VISITED_BUCKET, { history: 1, ttl: maxAgeMs, replicas });
      });
    return new Frontier(jetstream(nc), jsm, kv);
  }

  private async last(jobId: string): Promise<{ seq: number; n: number }> {
    const m = await this.jsm.streams.getMessage(FRONTIER_STREAM, { last_by_subj: frontierSubject(jobId) }).catch((e: Error) => {
      if (/no message found/i.test(e.message)) return null;
      throw e;
    });
    return m ? { seq: m.seq, n: m.json<FrontierEntry>().n } : { seq: 0, n: 0 };
  }

  /** Admit a URL once per crawl, while the crawl has room. */
  async admit(jobId: string, item: AdmitItem, limit: number): Promise<AdmitResult> {
    return (await this.admitMany(jobId, [item], limit))[0]!;
  }

  /**
   * Admit a page's links at once, each as `admit` would, in their order: the visited reads, the
   * claims and the final marks go out together (one round trip each, not one per link); only the
   * frontier publishes follow one another (each expects the one before it as the subject's last).
   * A link repeated in the list is a duplicate of its first spelling.
   */
  async admitMany(jobId: string, items: AdmitItem[], limit: number): Promise<AdmitResult[]> {
    const out: AdmitResult[] = new Array(items.length);
    const firsts = new Set<string>();
    const work: { i: number; key: string; h: string; vk: string }[] = [];
    const known = this.known.get(jobId);
    items.forEach((item, i) => {
      const key = uniqueKey(item.url);
      if (!key) return void (out[i] = { ok: false, reason: 'bad_url' });
      const h = hashOf(key);
      if (firsts.has(h) || known?.has(h)) return void (out[i] = { ok: false, reason: 'duplicate' });
      firsts.add(h);
      work.push({ i, key, h, vk: `${jobId}.${h}` });
    });
    const seen = await Promise.all(work.map((w) => this.kv.get(w.vk)));
    const claims: { w: (typeof work)[number]; rev: number }[] = [];
    const fresh: typeof work = [];
    work.forEach((w, k) => {
      const e = seen[k];
      if (!e || e.operation !== 'PUT') return void fresh.push(w);
      const v = e.json<Visited>();
      if (v.st === 'queued' || v.st === 'canonical') {
        out[w.i] = { ok: false, reason: 'duplicate' };
        this.remember(jobId, w.h);
      } else if (v.st === 'limit') out[w.i] = { ok: false, reason: 'limit' };
      // `admitting` left by a coordinator that died before its publish: finish its work (the message id
      // keeps a publish that did land from landing twice)
      else claims.push({ w, rev: e.revision });
    });
    if (!fresh.length && !claims.length) return out;
    let last = await this.last(jobId);
    // nothing is written for a URL the crawl has no room for (the count is read first)
    const room = Math.max(0, limit - last.n);
    for (const w of fresh.slice(room)) out[w.i] = { ok: false, reason: 'limit' };
    const created = await Promise.all(
      fresh.slice(0, room).map((w) =>
        this.kv.create(w.vk, enc({ st: 'admitting', at: Date.now() } satisfies Visited)).then(
          (rev) => ({ w, rev }),
          (e) => {
            if (!isConflict(e)) throw e;
            out[w.i] = { ok: false, reason: 'duplicate' }; // another coordinator admits it
            return null;
          },
        ),
      ),
    );
    for (const c of created) if (c) claims.push(c);
    claims.sort((a, b) => a.w.i - b.w.i);
    const marks: Promise<unknown>[] = [];
    const mark = (vk: string, st: Visited['st'], rev: number) =>
      marks.push(this.kv.update(vk, enc({ st, at: Date.now() } satisfies Visited), rev).catch(() => {}));
    for (const { w, rev } of claims) {
      const item = items[w.i]!;
      for (;;) {
        if (last.n >= limit) {
          mark(w.vk, 'limit', rev);
          out[w.i] = { ok: false, reason: 'limit' };
          break;
        }
        const entry: FrontierEntry = {
          url: item.url,
          uniqueKey: w.key,
          depth: item.depth,
          ...(item.from ? { from: item.from } : {}),
          n: last.n + 1,
        };
        try {
          const ack = await this.js.publish(frontierSubject(jobId), enc(entry), {
            msgID: `${jobId}:${w.h}`,
            expect: { lastSubjectSequence: last.seq },
          });
          // a duplicate: an earlier publish of this very URL landed (its ordinal is in the stream
          // already, the subject's last is unchanged)
          if (ack.duplicate) out[w.i] = { ok: true, n: (await this.entryAt(ack.seq))?.n ?? entry.n, seq: ack.seq };
          else {
            out[w.i] = { ok: true, n: entry.n, seq: ack.seq };
            last = { seq: ack.seq, n: entry.n };
          }
          mark(w.vk, 'queued', rev);
          this.remember(jobId, w.h);
          break;
        } catch (e) {
          if (!isConflict(e)) throw e; // another URL took this ordinal: read the tail again
          last = await this.last(jobId);
        }
      }
    }
    await Promise.all(marks);
    return out;
  }

  private remember(jobId: string, h: string): void {
    let set = this.known.get(jobId);
    if (!set) this.known.set(jobId, (set = new Set()));
    if (set.has(h)) return;
    set.add(h);
    this.knownCount++;
    while (this.knownCount > KNOWN_VISITED_MAX && this.known.size) {
      const [oldest, keys] = this.known.entries().next().value!;
      this.known.delete(oldest);
      this.knownCount -= keys.size;
    }
  }

  /**
   * Page `index` says its rel=canonical is `url` (its own origin, another uniqueKey). `duplicate`: that
   * URL is a page of the crawl already (admitted, or claimed by another page's canonical), so this page
   * is a copy of it; `claimed`: it is not, and is now in the visited set as this page's (a link to it
   * later is a duplicate). A repeat by the same page answers `claimed` again.
   */
  async claimCanonical(jobId: string, url: string, index: number): Promise<'duplicate' | 'claimed'> {
    const key = uniqueKey(url);
    if (!key) return 'claimed';
    const vk = `${jobId}.${hashOf(key)}`;
    const mine = enc({ st: 'canonical', at: Date.now(), i: index } satisfies Visited);
    for (let tries = 0; tries < 5; tries++) {
      const seen = await this.kv.get(vk);
      if (!seen || seen.operation !== 'PUT') {
        try {
          await this.kv.create(vk, mine);
          return 'claimed';
        } catch (e) {
          if (!isConflict(e)) throw e;
          continue;
        }
      }
      const v = seen.json<Visited>();
      if (v.st === 'canonical') return v.i === index ? 'claimed' : 'duplicate';
      if (v.st !== 'limit') return 'duplicate';
      // lost the race for the crawl's last slot: never a page, so this one stands for it
      try {
        await this.kv.update(vk, mine, seen.revision);
        return 'claimed';
      } catch (e) {
        if (!isConflict(e)) throw e;
      }
    }
    return 'claimed';
  }

  private async entryAt(seq: number): Promise<FrontierEntry | null> {
    const m = await this.jsm.streams.getMessage(FRONTIER_STREAM, { seq }).catch(() => null);
    return m ? m.json<FrontierEntry>() : null;
  }

  async cursor(jobId: string): Promise<Cursor> {
    const e = await this.kv.get(`${jobId}.cursor`);
    if (!e || e.operation !== 'PUT') return { seq: 0, n: 0, revision: 0 };
    const c = e.json<{ seq: number; n: number }>();
    return { ...c, revision: e.revision };
  }

  /** The next `max` admitted entries not yet handed out, after the cursor. */
  async pending(jobId: string, max: number): Promise<{ cursor: Cursor; entries: (FrontierEntry & { seq: number })[] }> {
    const cursor = await this.cursor(jobId);
    return { cursor, entries: await this.pendingAfter(jobId, cursor, max) };
  }

  /** The next `max` admitted entries after a cursor the caller read. */
  async pendingAfter(jobId: string, cursor: Pick<Cursor, 'seq'>, max: number): Promise<(FrontierEntry & { seq: number })[]> {
    const entries: (FrontierEntry & { seq: number })[] = [];
    let seq = cursor.seq;
    while (entries.length < max) {
      // STREAM.MSG.GET with next_by_subj (nats-server >= 2.9); the client's type lists only seq/last_by_subj
      const m = await this.jsm.streams
        .getMessage(FRONTIER_STREAM, { seq: seq + 1, next_by_subj: frontierSubject(jobId) } as unknown as { seq: number })
        .catch((e: Error) => {
          if (/no message found/i.test(e.message)) return null;
          throw e;
        });
      if (!m) break;
      seq = m.seq;
      entries.push({ ...m.json<FrontierEntry>(), seq: m.seq });
    }
    return entries;
  }

  /** Move the cursor past `entry` (the last one handed out); false when another coordinator moved it first. */
  async commit(jobId: string, cursor: Cursor, entry: { seq: number; n: number }): Promise<boolean> {
    const value = enc({ seq: entry.seq, n: entry.n });
    try {
      if (cursor.revision === 0) await this.kv.create(`${jobId}.cursor`, value);
      else await this.kv.update(`${jobId}.cursor`, value, cursor.revision);
      return true;
    } catch (e) {
      if (isConflict(e)) return false;
      throw e;
    }
  }

  /** The last admitted entry's stream sequence and ordinal ({0, 0}: none yet). */
  tail(jobId: string): Promise<{ seq: number; n: number }> {
    return this.last(jobId);
  }

  async counts(jobId: string): Promise<{ admitted: number; taken: number }> {
    const [last, cur] = await Promise.all([this.last(jobId), this.cursor(jobId)]);
    return { admitted: last.n, taken: cur.n };
  }

  /** A finished crawl's frontier and visited set go (purged: no delete markers left behind). */
  async drop(jobId: string): Promise<void> {
    const keys = this.known.get(jobId);
    if (keys) {
      this.known.delete(jobId);
      this.knownCount -= keys.size;
    }
    await this.jsm.streams.purge(FRONTIER_STREAM, { filter: frontierSubject(jobId) });
    await this.jsm.streams.purge(`KV_${VISITED_BUCKET}`, { filter: `$KV.${VISITED_BUCKET}.${jobId}.>` });
  }
}
