// A crawl's frontier and visited set in NATS, so they survive the restart of any one process and two
// coordinators can never both admit a URL (STYLE.md: "a request queue is the crawl's memory").
//
//   await Frontier.open(nc, {replicas, maxAgeMs})
//   frontier.admit(jobId, {url, depth, from}, limit)  → {ok: true, n, seq} | {ok: false, reason}
//   frontier.pending(jobId, max)                      → {cursor, entries}   the next entries not yet taken
//   frontier.commit(jobId, cursor, lastSeq)           → true, or false when another coordinator took them first
//   frontier.counts(jobId)                            → {admitted, taken}
//   frontier.drop(jobId)                              at the crawl's end: its keys and entries go
//
// Where things are:
// - visited set: bucket `crawl_visited`, key `<jobId>.<40 hex of sha256(uniqueKey)>`, created with
//   create-if-absent. Its value says `admitting` (this coordinator is publishing it), `queued` (in the
//   frontier) or `limit` (lost the race for the last slot). A duplicate link costs one read;
// - frontier: stream `CRAWL_FRONTIER`, subject `frontier.<jobId>`, one message per admitted URL, each
//   carrying its ordinal `n`. Every publish expects the subject's last sequence (a compare-and-set), so
//   the ordinals are dense and `n <= limit` holds across coordinators: the admission count and the queue
//   are one write. The message id `<jobId>:<hash>` makes a retried publish (a coordinator that died between
//   its visited entry and its publish, then redelivered) land once;
// Both are provisioned by shared/nats/provision.ts (the age of a page set's results).
// - cursor: key `<jobId>.cursor` in the same bucket, `{seq, n}` of the last entry handed to the task queue,
//   moved by compare-and-set. A coordinator publishes the tasks of `pending()` first (their message ids
//   make a second publish harmless), then `commit()`s: a crash in between hands the same pages out again,
//   never loses one.
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

export class Frontier {
  private readonly js: JetStreamClient;
  private readonly jsm: JetStreamManager;
  private readonly kv: KV;

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
  async admit(jobId: string, item: { url: string; depth: number; from?: string }, limit: number): Promise<AdmitResult> {
    const key = uniqueKey(item.url);
    if (!key) return { ok: false, reason: 'bad_url' };
    const h = hashOf(key);
    const vk = `${jobId}.${h}`;
    const seen = await this.kv.get(vk);
    let rev: number;
    if (seen && seen.operation === 'PUT') {
      const v = seen.json<Visited>();
      if (v.st === 'queued' || v.st === 'canonical') return { ok: false, reason: 'duplicate' };
      if (v.st === 'limit') return { ok: false, reason: 'limit' };
      // `admitting` left by a coordinator that died before its publish: finish its work (the message id
      // keeps a publish that did land from landing twice)
      rev = seen.revision;
    } else {
      if ((await this.last(jobId)).n >= limit) return { ok: false, reason: 'limit' };
      try {
        rev = await this.kv.create(vk, enc({ st: 'admitting', at: Date.now() } satisfies Visited));
      } catch (e) {
        if (isConflict(e)) return { ok: false, reason: 'duplicate' }; // another coordinator admits it
        throw e;
      }
    }
    for (;;) {
      const last = await this.last(jobId);
      if (last.n >= limit) {
        await this.kv.update(vk, enc({ st: 'limit', at: Date.now() } satisfies Visited), rev).catch(() => {});
        return { ok: false, reason: 'limit' };
      }
      const entry: FrontierEntry = {
        url: item.url,
        uniqueKey: key,
        depth: item.depth,
        ...(item.from ? { from: item.from } : {}),
        n: last.n + 1,
      };
      try {
        const ack = await this.js.publish(frontierSubject(jobId), enc(entry), {
          msgID: `${jobId}:${h}`,
          expect: { lastSubjectSequence: last.seq },
        });
        // a duplicate: an earlier publish of this very URL landed (its ordinal is in the stream already)
        const n = ack.duplicate ? ((await this.entryAt(ack.seq))?.n ?? entry.n) : entry.n;
        await this.kv.update(vk, enc({ st: 'queued', at: Date.now() } satisfies Visited), rev).catch(() => {});
        return { ok: true, n, seq: ack.seq };
      } catch (e) {
        if (!isConflict(e)) throw e; // another URL took this ordinal: read the tail again
      }
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
    return { cursor, entries };
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

  async counts(jobId: string): Promise<{ admitted: number; taken: number }> {
    const [last, cur] = await Promise.all([this.last(jobId), this.cursor(jobId)]);
    return { admitted: last.n, taken: cur.n };
  }

  /** A finished crawl's frontier and visited set go (purged: no delete markers left behind). */
  async drop(jobId: string): Promise<void> {
    await this.jsm.streams.purge(FRONTIER_STREAM, { filter: frontierSubject(jobId) });
    await this.jsm.streams.purge(`KV_${VISITED_BUCKET}`, { filter: `$KV.${VISITED_BUCKET}.${jobId}.>` });
  }
}
