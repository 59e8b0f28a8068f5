// A crawl's pages in NATS (issue 42): the frontier (shared/crawl/frontier.ts: admitted URLs, each
// with its ordinal n, and the visited set) and, beside the visited keys in the same bucket, one
// record per page handed out (`<jobId>.p<index>`: url, key, depth), the page keys taken
// (`<jobId>.k<hash>` → index, create-if-absent: unique across supervisors) and the start origin's
// robots.txt (`<jobId>.robots`). Page index = frontier ordinal - 1; page 0 is the start URL, known
// from the request. Nothing here lives in one process's memory: a supervisor restarted mid-crawl
// reads on. Frontier.drop removes all of it when the crawl ends.
import { createHash } from 'node:crypto';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { Frontier, VISITED_BUCKET } from '../crawl/frontier.ts';
import { clashKey, pageKeyOf, type PlannedPage } from '../crawl/keys.ts';
import { parseTargetUrl } from '../outbound/index.ts';
import type { JobRecord } from '../protocol/jobs.ts';

export interface CrawlPage extends PlannedPage {
  depth: number;
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
    if (index === 0) return { ...startPageOf(job), key: await this.keyOf(job.id, 0, startPageOf(job).key) };
    const e = await this.kv.get(`${job.id}.p${index}`);
    return e && e.operation === 'PUT' ? e.json<CrawlPage>() : null;
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
    const had = await this.kv.get(rk);
    if (had?.operation === 'PUT') return had.json<CrawlPage>();
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
      if (now?.operation === 'PUT') return now.json<CrawlPage>();
    }
    return page;
  }

  /** The earliest start of the crawl's next page (robots.txt Crawl-delay), 0 when none was set. */
  async nextAt(jobId: string): Promise<number> {
    const e = await this.kv.get(`${jobId}.polite`);
    return e && e.operation === 'PUT' ? e.json<{ nextAt: number }>().nextAt : 0;
  }

  async setNextAt(jobId: string, nextAt: number): Promise<void> {
    await this.kv.put(`${jobId}.polite`, enc({ nextAt }));
  }

  async robots(jobId: string): Promise<RobotsText | null> {
    const e = await this.kv.get(`${jobId}.robots`);
    return e && e.operation === 'PUT' ? e.json<RobotsText>() : null;
  }

  async setRobots(jobId: string, r: RobotsText): Promise<void> {
    await this.kv.put(`${jobId}.robots`, enc({ status: r.status, text: r.text.slice(0, ROBOTS_TEXT_MAX) }));
  }
}
