// The SQLite projection of the LEDGER stream: answers "a wallet's entries, newest first, before id N"
// and "does this business event already exist", which the stream cannot answer cheaply. It is rebuilt
// from the stream on every start (the file is per instance and thrown away on stop); the stream stays
// the only copy of the money.
import Database from 'better-sqlite3';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { sqliteTable, integer, text, index } from 'drizzle-orm/sqlite-core';
import { and, desc, eq, gt, lt, sql } from 'drizzle-orm';
import { mkdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { LedgerEntry, LedgerType } from '../../shared/protocol/wallet.ts';
import type { LedgerMessage } from '../../shared/protocol/wallet.ts';

export const entries = sqliteTable('entries', {
  id: integer('id').primaryKey(),
  walletId: text('wallet_id').notNull(),
  type: text('type').notNull(),
  amount: integer('amount').notNull(),
  balanceAfter: integer('balance_after').notNull(),
  at: integer('at').notNull(),
  ref: text('ref').notNull(),
  jobId: text('job_id'),
  resultKey: text('result_key'),
  topupId: text('topup_id'),
  reason: text('reason'),
  bonus: integer('bonus'),
}, (t) => [
  index('entries_wallet_id').on(t.walletId, t.id),
  index('entries_wallet_ref').on(t.walletId, t.ref),
  index('entries_job').on(t.walletId, t.jobId),
]);

const DDL = `
CREATE TABLE IF NOT EXISTS entries (
  id INTEGER PRIMARY KEY,
  wallet_id TEXT NOT NULL,
  type TEXT NOT NULL,
  amount INTEGER NOT NULL,
  balance_after INTEGER NOT NULL,
  at INTEGER NOT NULL,
  ref TEXT NOT NULL,
  job_id TEXT,
  result_key TEXT,
  topup_id TEXT,
  reason TEXT,
  bonus INTEGER
);
CREATE INDEX IF NOT EXISTS entries_wallet_id ON entries (wallet_id, id);
CREATE INDEX IF NOT EXISTS entries_wallet_ref ON entries (wallet_id, ref);
CREATE INDEX IF NOT EXISTS entries_job ON entries (wallet_id, job_id);
`;

export type Row = typeof entries.$inferSelect;

export function rowToEntry(r: Row): LedgerEntry & { bonus?: number } {
  const e: LedgerEntry & { bonus?: number } = { id: r.id, type: r.type as LedgerType, amount: r.amount, balanceAfter: r.balanceAfter, at: r.at };
  if (r.jobId) e.jobId = r.jobId;
  if (r.resultKey) e.resultKey = r.resultKey;
  if (r.topupId) e.topupId = r.topupId;
  if (r.reason) e.reason = r.reason;
  if (r.bonus) e.bonus = r.bonus;
  return e;
}

const p = {
  id: sql.placeholder('id'),
  walletId: sql.placeholder('walletId'),
  ref: sql.placeholder('ref'),
  jobId: sql.placeholder('jobId'),
  before: sql.placeholder('before'),
  afterId: sql.placeholder('afterId'),
  limit: sql.placeholder('limit'),
};

/**
 * Every query, built and prepared once per file (issue 17): building the SQL with drizzle and
 * better-sqlite3's `prepare` on each call cost ~60-70 µs, more than the query itself.
 */
function statements(db: BetterSQLite3Database) {
  return {
    insert: db.insert(entries).values({
      id: p.id,
      walletId: p.walletId,
      type: sql.placeholder('type'),
      amount: sql.placeholder('amount'),
      balanceAfter: sql.placeholder('balanceAfter'),
      at: sql.placeholder('at'),
      ref: p.ref,
      jobId: p.jobId,
      resultKey: sql.placeholder('resultKey'),
      topupId: sql.placeholder('topupId'),
      reason: sql.placeholder('reason'),
      bonus: sql.placeholder('bonus'),
    }).onConflictDoNothing().prepare(),
    byRef: db.select().from(entries).where(and(eq(entries.walletId, p.walletId), eq(entries.ref, p.ref))).prepare(),
    forJob: db.select().from(entries).where(and(eq(entries.walletId, p.walletId), eq(entries.jobId, p.jobId))).orderBy(entries.id).prepare(),
    page: db.select().from(entries).where(eq(entries.walletId, p.walletId)).orderBy(desc(entries.id)).limit(p.limit).prepare(),
    pageBefore: db.select().from(entries).where(and(eq(entries.walletId, p.walletId), lt(entries.id, p.before))).orderBy(desc(entries.id)).limit(p.limit).prepare(),
    chargesAfter: db.select().from(entries).where(and(eq(entries.type, 'charge'), gt(entries.id, p.afterId))).orderBy(entries.id).limit(p.limit).prepare(),
    topupCredits: db.select().from(entries).where(eq(entries.type, 'topup')).orderBy(entries.id).prepare(),
    count: db.select({ n: sql<number>`count(*)` }).from(entries).prepare(),
  };
}

export class Projection {
  readonly file: string;
  private sqlite: Database.Database;
  private q: ReturnType<typeof statements>;

  constructor(file: string) {
    this.file = file;
    mkdirSync(dirname(file), { recursive: true });
    // Rebuilt from the stream: an old file of a crashed instance with the same name is discarded.
    for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
    this.sqlite = new Database(file);
    this.sqlite.pragma('journal_mode = WAL');
    this.sqlite.pragma('synchronous = OFF'); // a projection: losing it costs a rebuild, nothing more
    this.sqlite.exec(DDL);
    this.q = statements(drizzle(this.sqlite));
  }

  apply(seq: number, walletId: string, m: LedgerMessage): void {
    this.q.insert.run({
      id: seq,
      walletId,
      type: m.type,
      amount: m.amount,
      balanceAfter: m.balanceAfter,
      at: m.at,
      ref: m.ref,
      jobId: m.jobId ?? null,
      resultKey: m.resultKey ?? null,
      topupId: m.topupId ?? null,
      reason: m.reason ?? null,
      bonus: m.bonus ?? null,
    });
  }

  byRef(walletId: string, ref: string): Row | undefined {
    return this.q.byRef.get({ walletId, ref });
  }

  forJob(walletId: string, jobId: string): Row[] {
    return this.q.forJob.all({ walletId, jobId });
  }

  /** Newest first; `before`: only ids below it. Asks one row more than `limit` to know whether a next page exists. */
  page(walletId: string, before: number | undefined, limit: number): { entries: Row[]; next: number | null } {
    const rows = before === undefined ? this.q.page.all({ walletId, limit: limit + 1 }) : this.q.pageBefore.all({ walletId, before, limit: limit + 1 });
    const more = rows.length > limit;
    const page = rows.slice(0, limit);
    return { entries: page, next: more ? page.at(-1)!.id : null };
  }

  /**
   * Charges with an id above `afterId`, in id order (orphan reconciliation). Selected by id only:
   * the caller advances its cursor on the same order, so no charge can fall behind the cursor.
   */
  chargesAfter(afterId: number, limit = 500): Row[] {
    return this.q.chargesAfter.all({ afterId, limit });
  }

  /** Every top-up credit, oldest first (reconciliation with the Lightning node). */
  topupCredits(): Row[] {
    return this.q.topupCredits.all();
  }

  count(): number {
    return this.q.count.get()!.n;
  }

  close(remove = true): void {
    this.sqlite.close();
    if (remove) for (const f of [this.file, `${this.file}-wal`, `${this.file}-shm`]) rmSync(f, { force: true });
  }
}
