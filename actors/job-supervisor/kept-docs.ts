// The documents the supervisor's projection keeps beside its rows (projection.ts): each wallet's
// newest LIST_MAX jobs, so a job list reads no document from the bucket (an old one sits in a
// message block nats-server must load first: p99 12 ms against 2 ms at 1 M jobs,
// docs/performance.md), and never more than LIST_MAX per wallet, whatever the wallet's history.
// The table is ordered by wallet, newest first, so a list reads a few adjacent pages, not one page
// per job (better-sqlite3 reads are synchronous: a cold page holds the event loop); the file's 8 KB
// pages (PAGE_SIZE) hold a 1.5 KB document in its row, where 4 KB pages gave each one an overflow
// page of its own (4.8 KB per job). Every call runs inside the projection's transaction.
import type Database from 'better-sqlite3';
import type { JobRecord } from '../../shared/protocol/jobs.ts';
import { LIST_MAX } from '../../shared/protocol/job-supervisor.ts';

/** Bytes per page of a new projection file (SQLite's default is 4096). */
export const PAGE_SIZE = 8192;

export const DOCS_DDL = `CREATE TABLE IF NOT EXISTS docs (wallet_id TEXT NOT NULL, created_at INTEGER NOT NULL, id TEXT NOT NULL, doc TEXT NOT NULL,
  PRIMARY KEY (wallet_id, created_at, id)) WITHOUT ROWID;`;

/** A `jobs` row's document, for a LEFT JOIN docs ON ... */
export const DOC_OF_ROW = 'docs.wallet_id = jobs.wallet_id AND docs.created_at = jobs.created_at AND docs.id = jobs.id';

export class KeptDocs {
  private q;
  constructor(s: Database.Database) {
    this.q = {
      exists: s.prepare('SELECT 1 FROM jobs WHERE id = ?').pluck(),
      // the wallet's LIST_MAX-th newest job (an index walk of LIST_MAX entries)
      lastListed: s.prepare(
        `SELECT id, created_at FROM jobs WHERE wallet_id = ? ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET ${LIST_MAX - 1}`,
      ),
      add: s.prepare('INSERT OR REPLACE INTO docs (wallet_id, created_at, id, doc) VALUES (@wallet_id, @created_at, @id, @doc)'),
      // a job's document is replaced only while it is kept (one outside the window stays out)
      set: s.prepare('UPDATE docs SET doc = @doc WHERE wallet_id = @wallet_id AND created_at = @created_at AND id = @id'),
      drop: s.prepare('DELETE FROM docs WHERE wallet_id = @wallet_id AND created_at = @created_at AND id = @id'),
      dropOf: s.prepare(
        'DELETE FROM docs WHERE (wallet_id, created_at, id) IN (SELECT wallet_id, created_at, id FROM jobs WHERE id = ? AND revision <= ?)',
      ),
      count: s.prepare('SELECT count(*) FROM docs WHERE wallet_id = ?').pluck(),
    };
  }

  /**
   * Before a job's row is written: whether the job is new, and whether its document is to be kept.
   * A new job takes a place among its wallet's newest LIST_MAX if it is newer than the last of them,
   * whose document then leaves (its row stays).
   */
  place(job: JobRecord): { added: boolean; keep: boolean } {
    if (this.q.exists.get(job.id)) return { added: false, keep: false };
    const last = this.q.lastListed.get(job.walletId) as { id: string; created_at: number } | undefined;
    if (!last) return { added: true, keep: true };
    const keep = job.createdAt > last.created_at || (job.createdAt === last.created_at && job.id > last.id);
    if (keep) this.q.drop.run({ wallet_id: job.walletId, created_at: last.created_at, id: last.id });
    return { added: true, keep };
  }

  /** After the row: a kept new job's document is added; a changed row's document replaced if kept. */
  written(job: JobRecord, doc: string, placed: { added: boolean; keep: boolean }, changed: boolean): void {
    const key = { wallet_id: job.walletId, created_at: job.createdAt, id: job.id, doc };
    if (placed.keep) this.q.add.run(key);
    else if (changed && !placed.added) this.q.set.run(key);
  }

  /** Before a job's row is deleted (at most at `revision`): its document goes with it. */
  dropOf(id: string, revision = Number.MAX_SAFE_INTEGER): void {
    this.q.dropOf.run(id, revision);
  }

  /** How many documents a wallet has kept (tests: the bound). */
  count(walletId: string): number {
    return this.q.count.get(walletId) as number;
  }
}
