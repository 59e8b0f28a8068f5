// A crawl's pages in NATS (issue 42): the frontier (shared/crawl/frontier.ts: admitted URLs, each
// with its ordinal n, and the visited set) and, beside the visited keys in the same bucket, one
// record per page handed out (`<jobId>.p<index>`: url, key, depth), the page keys taken
// (`<jobId>.k<hash>` → index, create-if-absent: unique across supervisors) and the start origin's
// robots.txt (`<jobId>.robots`), each page's sends (`<jobId>.t<index>`) and each origin's politeness
// (`<jobId>.o<hash>`). Page index = frontier ordinal - 1; page 0 is the start URL, known
// from the request. Nothing here lives in one process's memory: a supervisor restarted mid-crawl
// reads on. Frontier.drop removes all of it when the crawl ends.
import { createHash } from 'node:crypto';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { Frontier, VISITED_BUCKET } from '../crawl/frontier.ts';
import { clashKey, pageKeyOf, type PlannedPage } from '../crawl/keys.ts';
import { parseTargetUrl } from '../outbound/index.ts';
import { NEW_ORIGIN, type OriginState } from '../crawl/politeness.ts';
import type { JobRecord } from '../protocol/jobs.ts';

export interface CrawlPage extends PlannedPage {
  depth: number;
}

/**
 * A crawl page asked again later (a page outcome's `retry`): the target said 429/503 (`status`), or our
 * own browser-pool could not render it now (`ours`: the error it would have failed with; `status` null),
 * which says nothing of the target's origin.
 */
export type RetryFact =
  | { status: number; retryAfterMs: number | null; ours?: undefined }
  | { status: null; ours: OurRetry; retryAfterMs: number | null };
/** Our own lack of capacity for a page's render (actors/converter/page.ts): not the target's failure. */
export type OurRetry = 'busy' | 'service_unavailable';

/** A crawl page's sends (`<jobId>.t<index>`): retries after 429/503 or our busy browser-pool, re-sends of a lost task. */
export interface PageAttempt {
  /** Retries asked so far: 429/503 answers and our browser-pool's `busy` (its task key is `page:<index>~<tries + lost>` from the first retry on). */
  tries: number;
  /** Re-sends of a task lost with no outcome. */
  lost: number;
  /** When its latest task went out, and that task's TASKS sequence. */
  sentAt: number;
  seq?: number;
  /** Held until then (a 429/503's Retry-After or back-off). */
  retryAt?: number;
  /** The `at` of the last retry outcome handled (a redelivered one is not counted twice). */
  last?: number;
}

/** An origin's politeness state (shared/crawl/politeness.ts) with the pages in flight on it and its robots' Crawl-delay. */
export interface OriginPolite extends OriginState {
  pages: number[];
  /** Another origin than the start's: its Crawl-delay, once a page of it read its robots.txt. */
  crawlDelayMs?: number;
}

/** What a crawl's first page task reads of the start origin's robots.txt (actors/converter/page.ts). */
export interface RobotsText {
  status: number | null;
  text: string;
}

/** The longest robots.txt a page outcome carries to the supervisor. */
export const ROBOTS_TEXT_MAX = 256 * 1024;

/** Page 0 of a crawl: its start URL. */
export function startPageOf(job: Pick<JobRecord, 'request'>): CrawlPage {
  const u = parseTargetUrl(String(job.request.url));
  u.hash = '';
  return { url: u.href, source: String(job.request.url), key: pageKeyOf(u), depth: 0 };
}

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const hashOf = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 40);
const isConflict = (e: unknown) => /wrong last sequence|key exists/i.test(String((e as Error)?.message));

export class CrawlStore {
  readonly frontier: Frontier;
  private readonly kv: KV;
  /** Page records read or made here (never changed once made): a crawl's steps read them again and again. Bounded. */
  private readonly known = new Map<string, CrawlPage>();

  private constructor(frontier: Frontier, kv: KV) {
    this.frontier = frontier;
    this.kv = kv;
  }

  static async open(nc: NatsConnection, o: { replicas?: number; maxAgeMs?: number } = {}): Promise<CrawlStore> {
    const frontier = await Frontier.open(nc, o);
    return new CrawlStore(frontier, await new Kvm(nc).open(VISITED_BUCKET));
  }

  /** A handed-out page (index 0: the start URL), or null when no coordinator recorded it. */
  async page(job: Pick<JobRecord, 'id' | 'request'>, index: number): Promise<CrawlPage | null> {
    const rk = `${job.id}.p${index}`;
    const had = this.known.get(rk);
    if (had) return had;
    if (index === 0) return this.remember(rk, { ...startPageOf(job), key: await this.keyOf(job.id, 0, startPageOf(job).key) });
    const e = await this.kv.get(rk);
    return e && e.operation === 'PUT' ? this.remember(rk, e.json<CrawlPage>()) : null;
  }

  private remember(rk: string, page: CrawlPage): CrawlPage {
    if (this.known.size >= 4096) this.known.delete(this.known.keys().next().value!);
    this.known.set(rk, page);
    return page;
  }

  /** The unique key of page `index` (its own spelling or the first free `~n`); the same on a repeat. */
  private async keyOf(jobId: string, index: number, base: string): Promise<string> {
    for (let n = 1; ; n++) {
      const key = clashKey(base, n);
      const k = `${jobId}.k${hashOf(key.toLowerCase())}`;
      try {
        await this.kv.create(k, enc({ i: index }));
        return key;
      } catch (e) {
        if (!isConflict(e)) throw e;
        const held = await this.kv.get(k);
        if (held?.operation === 'PUT' && held.json<{ i: number }>().i === index) return key;
      }
    }
  }

  /** Make page `index` of a frontier entry (its key and record); a repeat answers the same page. */
  async place(jobId: string, index: number, entry: { url: string; depth: number; from?: string }): Promise<CrawlPage> {
    const rk = `${jobId}.p${index}`;
    const known = this.known.get(rk);
    if (known) return known;
    // made here first (a repeat, after a step that stopped, finds the key and the record taken)
    const page: CrawlPage = {
      url: entry.url,
      source: entry.url,
      key: await this.keyOf(jobId, index, pageKeyOf(entry.url)),
      depth: entry.depth,
    };
    try {
      await this.kv.create(rk, enc(page));
    } catch (e) {
      if (!isConflict(e)) throw e;
      const now = await this.kv.get(rk);
      if (now?.operation === 'PUT') return this.remember(rk, now.json<CrawlPage>());
    }
    return this.remember(rk, page);
  }

  /** Page `index`'s sends and retries (none yet: null). */
  async attempt(jobId: string, index: number): Promise<PageAttempt | null> {
    const e = await this.kv.get(`${jobId}.t${index}`);
    return e && e.operation === 'PUT' ? e.json<PageAttempt>() : null;
  }

  async setAttempt(jobId: string, index: number, a: PageAttempt): Promise<void> {
    await this.kv.put(`${jobId}.t${index}`, enc(a));
  }

  /** An origin's politeness state in this crawl (shared/crawl/politeness.ts). */
  async origin(jobId: string, origin: string): Promise<OriginPolite> {
    const e = await this.kv.get(`${jobId}.o${hashOf(origin)}`);
    return e && e.operation === 'PUT' ? e.json<OriginPolite>() : { ...NEW_ORIGIN, pages: [] };
  }

  /** Change an origin's politeness state by compare-and-set (two supervisors never lose each other's write). */
  async updateOrigin(jobId: string, origin: string, f: (s: OriginPolite) => OriginPolite | null): Promise<OriginPolite> {
    const k = `${jobId}.o${hashOf(origin)}`;
    for (;;) {
      const e = await this.kv.get(k);
      const cur = e && e.operation === 'PUT' ? e.json<OriginPolite>() : { ...NEW_ORIGIN, pages: [] };
      const next = f(cur);
      if (!next) return cur;
      try {
        if (e && e.operation === 'PUT') await this.kv.update(k, enc(next), e.revision);
        else await this.kv.create(k, enc(next));
        return next;
      } catch (err) {
        if (!isConflict(err)) throw err;
      }
    }
  }

  async robots(jobId: string): Promise<RobotsText | null> {
    const e = await this.kv.get(`${jobId}.robots`);
    return e && e.operation === 'PUT' ? e.json<RobotsText>() : null;
  }

  async setRobots(jobId: string, r: RobotsText): Promise<void> {
    await this.kv.put(`${jobId}.robots`, enc({ status: r.status, text: r.text.slice(0, ROBOTS_TEXT_MAX) }));
  }
}
