// The projection's reads (projection.ts): a wallet's newest jobs and the sweeps' due lists, each an
// ordered index read from its head (plan() shows it), over the tables projection-schema.ts defines.
import type Database from 'better-sqlite3';
import { LIST_MAX } from '../../shared/protocol/job-supervisor.ts';
import type { KeptDocs } from './kept-docs.ts';
import type { Row, Statements } from './projection-schema.ts';

export abstract class ProjectionReads {
  protected sqlite!: Database.Database;
  protected q!: Statements;
  protected docs!: KeptDocs;

  /**
   * A wallet's newest jobs first: each id with its document as last applied, or null for one the
   * projection does not keep (a newer job of the wallet was deleted since: read it from the bucket).
   */
  list(walletId: string, limit: number): { id: string; doc: string | null }[] {
    return this.q.list.all(walletId, Math.min(limit, LIST_MAX)) as { id: string; doc: string | null }[];
  }

  /** How many documents the projection keeps for a wallet (tests: the bound). */
  docsKept(walletId: string): number {
    return this.docs.count(walletId);
  }

  row(id: string): Row | null {
    return (this.q.row.get(id) as Row | undefined) ?? null;
  }

  /** Ids of unfinished jobs in a status, created before a time, oldest first. */
  unfinished(status: 'queued' | 'processing', createdBefore: number, limit = 500): string[] {
    return this.q.unfinished.all(status, createdBefore, limit) as string[];
  }

  /** Ids of jobs past expiresAt whose files are not yet deleted, soonest first. */
  expired(now: number, limit = 500): string[] {
    return this.q.purgeDue.all(now, limit) as string[];
  }

  /** Files that should still be in the stores (done results of jobs not expired), soonest expiry first. */
  /** Finished jobs with a failed result not refunded (each must be settled again), oldest first. */
  unrefunded(limit = 1_000): string[] {
    return this.q.unrefunded.all(limit) as string[];
  }

  keptFiles(now: number, limit = 10_000): { jobId: string; key: string; store: string; name: string }[] {
    const out: { jobId: string; key: string; store: string; name: string }[] = [];
    for (const r of this.q.keptFiles.all(now, limit) as { id: string; files: string }[]) {
      for (const [key, store, name] of JSON.parse(r.files) as string[][]) out.push({ jobId: r.id, key: key!, store: store!, name: name! });
    }
    return out;
  }

  /** Ids of jobs whose webhook is due and not claimed by a live instance. */
  webhooksDue(now: number, limit = 500): string[] {
    return this.q.webhookDue.all(now, limit) as string[];
  }

  /** Finished, purged jobs past their record retention: their documents leave the bucket. */
  forgetDue(now: number, limit = 500): { id: string; revision: number }[] {
    return this.q.forgetDue.all(now, limit) as { id: string; revision: number }[];
  }

  /** Jobs whose documents are due to move to the archive, oldest purge first. */
  archiveDue(now: number, limit = 500): string[] {
    return this.q.archiveDue.all(now, limit) as string[];
  }

  /** The bucket's document is not one to archive (or is gone): off the due list until a write says otherwise. */
  notArchivable(id: string): void {
    this.q.notArchivable.run(id);
  }

  count(): number {
    return this.q.count.get() as number;
  }

  unfinishedStats(): { unfinished: number; oldest: { id: string; createdAt: number } | null } {
    const o = this.q.oldestUnfinished.get() as { id: string; created_at: number } | undefined;
    return { unfinished: this.q.countUnfinished.get() as number, oldest: o ? { id: o.id, createdAt: o.created_at } : null };
  }

  /** The query plan of a due list (tests: each is an index search, never a scan of every job). */
  plan(which: 'purgeDue' | 'webhookDue' | 'forgetDue' | 'unfinished' | 'list' | 'unrefunded' | 'archiveDue'): string {
    const sql = (this.q[which] as unknown as { source: string }).source;
    const args = { unfinished: ['queued', 1, 1], list: ['w', 1], unrefunded: [1] }[which as string] ?? [1, 1];
    return (this.sqlite.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[]).map((r) => r.detail).join('; ');
  }
}
