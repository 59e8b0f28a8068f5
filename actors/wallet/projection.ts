// The SQLite projection of the LEDGER stream: answers "a wallet's entries, newest first, before id N"
// and "does this business event already exist", which the stream cannot answer cheaply. The stream
// stays the only copy of the money; this file is a cache of it that survives restarts (issue 26):
// beside the rows it keeps a checkpoint, the LEDGER sequence up to which every entry is applied,
// written in the same SQLite transaction as the rows, and the stream's identity (name and `created`).
// At start the ledger (ledger.ts) catches up from the checkpoint, or throws the rows away and
// rebuilds when the file cannot be trusted (another stream, a checkpoint ahead of the stream).
//
// Files: <dir>/ledger-<slot>.sqlite, the lowest slot no running instance holds (an exclusive SQLite
// lock, held until close and released by the OS when a process dies). A restart takes its old slot
// back; N instances sharing a data folder use N files, never one more per start.
import Database from 'better-sqlite3';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { createRequire } from 'node:module';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { LedgerEntry, LedgerType } from '../../shared/protocol/wallet.ts';
import type { LedgerMessage } from '../../shared/protocol/wallet.ts';

// drizzle-orm is loaded as CommonJS (its package ships both). Node 22's ES module loader reads the
// package.json of a module's package for every module it loads, and re-parses that file's `exports`
// map each time; drizzle-orm's is 179 KB and the wallet loads 111 of its modules: 1.5 s of CPU
// per process that starts a wallet, against 0.3 s through require (docs/notes/issue-30.md,
// session 18). This file is the only user of drizzle-orm, so there is one copy of it either way.
const require = createRequire(import.meta.url);
const { drizzle } = require('drizzle-orm/better-sqlite3') as typeof import('drizzle-orm/better-sqlite3');
const { sqliteTable, integer, text, index } = require('drizzle-orm/sqlite-core') as typeof import('drizzle-orm/sqlite-core');
const { and, desc, eq, gt, lt, lte, sql } = require('drizzle-orm') as typeof import('drizzle-orm');

export const entries = sqliteTable(
  'entries',
  {
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
  },
  (t) => [
    index('entries_wallet_id').on(t.walletId, t.id),
    index('entries_wallet_ref').on(t.walletId, t.ref),
    index('entries_job').on(t.walletId, t.jobId),
  ],
);

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
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
`;

/** Slots tried before a start gives up: more wallet instances than this on one data folder is a mistake. */
export const MAX_SLOTS = 16;

/** What the checkpoint says about the stream the rows came from. */
export interface Checkpoint {
  stream: string;
  /** The stream's `created` timestamp: a stream deleted and made again (or another store) has another. */
  created: string;
  /** Every LEDGER entry up to this sequence is applied (rows above it may exist too: see `apply`). */
  applied: number;
  /** The orphan sweep's cursor (orphans.ts): every charge up to this id was looked at. */
  orphanCursor: number;
}

export type Row = typeof entries.$inferSelect;

export function rowToEntry(r: Row): LedgerEntry & { bonus?: number } {
  const e: LedgerEntry & { bonus?: number } = {
    id: r.id,
    type: r.type as LedgerType,
    amount: r.amount,
    balanceAfter: r.balanceAfter,
    at: r.at,
  };
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
    insert: db
      .insert(entries)
      .values({
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
      })
      .onConflictDoNothing()
      .prepare(),
    byRef: db
      .select()
      .from(entries)
      .where(and(eq(entries.walletId, p.walletId), eq(entries.ref, p.ref)))
      .prepare(),
    forJob: db
      .select()
      .from(entries)
      .where(and(eq(entries.walletId, p.walletId), eq(entries.jobId, p.jobId)))
      .orderBy(entries.id)
      .prepare(),
    page: db.select().from(entries).where(eq(entries.walletId, p.walletId)).orderBy(desc(entries.id)).limit(p.limit).prepare(),
    pageBefore: db
      .select()
      .from(entries)
      .where(and(eq(entries.walletId, p.walletId), lt(entries.id, p.before)))
      .orderBy(desc(entries.id))
      .limit(p.limit)
      .prepare(),
    chargesAfter: db
      .select()
      .from(entries)
      .where(and(eq(entries.type, 'charge'), gt(entries.id, p.afterId), lte(entries.id, sql.placeholder('upTo'))))
      .orderBy(entries.id)
      .limit(p.limit)
      .prepare(),
    topupCredits: db.select().from(entries).where(eq(entries.type, 'topup')).orderBy(entries.id).prepare(),
    count: db.select({ n: sql<number>`count(*)` }).from(entries).prepare(),
    byId: db.select().from(entries).where(eq(entries.id, p.id)).prepare(),
    newest: db.select().from(entries).orderBy(desc(entries.id)).limit(p.limit).prepare(),
  };
}

export class Projection {
  readonly file: string;
  private sqlite: Database.Database;
  private q: ReturnType<typeof statements>;
  private getMeta: Database.Statement<[string], { value: string }>;
  private setMeta: Database.Statement<[string, string]>;
  private applyBatchTx: (rows: { seq: number; walletId: string; m: LedgerMessage | null }[], applied: number) => void;

  /** Opens (or creates) the lowest free slot's file in `dir`. */
  constructor(dir: string) {
    mkdirSync(dir, { recursive: true });
    removeOldPerInstanceFiles(dir);
    let opened: { file: string; db: Database.Database } | undefined;
    const busy: string[] = [];
    for (let slot = 0; slot < MAX_SLOTS && !opened; slot++) {
      const file = join(dir, `ledger-${slot}.sqlite`);
      const db = new Database(file, { timeout: 0 });
      try {
        // Exclusive: the lock is taken by the first write below and kept until close (or the
        // process's death), so a second instance moves on to the next slot.
        db.pragma('locking_mode = EXCLUSIVE');
        db.pragma('journal_mode = WAL');
        db.exec(DDL);
        // a write: only it takes the exclusive lock (a read would take a shared one)
        db.prepare("INSERT INTO meta (key, value) VALUES ('openedAt', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(
          String(Date.now()),
        );
        opened = { file, db };
      } catch (e) {
        db.close();
        if ((e as { code?: string }).code !== 'SQLITE_BUSY') throw e;
        busy.push(file);
      }
    }
    if (!opened) throw new Error(`every ledger projection slot in ${dir} is held by a running instance (${MAX_SLOTS})`);
    this.file = opened.file;
    this.sqlite = opened.db;
    this.sqlite.pragma('synchronous = OFF'); // a projection: losing it costs a rebuild, nothing more
    this.q = statements(drizzle(this.sqlite));
    this.getMeta = this.sqlite.prepare('SELECT value FROM meta WHERE key = ?');
    this.setMeta = this.sqlite.prepare(
      'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    );
    this.applyBatchTx = this.sqlite.transaction((rows, applied) => {
      for (const r of rows) if (r.m) this.apply(r.seq, r.walletId, r.m);
      this.setMeta.run('applied', String(applied));
    });
  }

  /** The checkpoint, or null for a new file (or one without a stream identity). */
  checkpoint(): Checkpoint | null {
    const stream = this.getMeta.get('stream')?.value;
    const created = this.getMeta.get('created')?.value;
    if (!stream || !created) return null;
    return { stream, created, applied: Number(this.getMeta.get('applied')?.value ?? 0), orphanCursor: this.orphanCursor() };
  }

  /** Throws every row away and starts again for this stream, at sequence 0 (a rebuild). */
  reset(stream: string, created: string): void {
    this.sqlite.transaction(() => {
      // dropping the table is much faster than deleting its rows; the freed pages are reused
      this.sqlite.exec('DROP TABLE IF EXISTS entries; DELETE FROM meta;');
      this.sqlite.exec(DDL);
      this.setMeta.run('stream', stream);
      this.setMeta.run('created', created);
      this.setMeta.run('applied', '0');
    })();
    this.q = statements(drizzle(this.sqlite));
  }

  /**
   * One entry, outside the checkpoint: the wallet's own writes and per-wallet catch-up apply entries
   * ahead of it. Idempotent (by stream sequence): the consumer applies them again later.
   */
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

  /** Entries in stream order (`m` null: unreadable, skipped) and the new checkpoint, in one transaction. */
  applyBatch(rows: { seq: number; walletId: string; m: LedgerMessage | null }[], applied: number): void {
    this.applyBatchTx(rows, applied);
  }

  /** The rows with the highest ids, newest first. */
  newest(limit: number): Row[] {
    return this.q.newest.all({ limit });
  }

  byId(id: number): Row | undefined {
    return this.q.byId.get({ id });
  }

  byRef(walletId: string, ref: string): Row | undefined {
    return this.q.byRef.get({ walletId, ref });
  }

  forJob(walletId: string, jobId: string): Row[] {
    return this.q.forJob.all({ walletId, jobId });
  }

  /** Newest first; `before`: only ids below it. Asks one row more than `limit` to know whether a next page exists. */
  page(walletId: string, before: number | undefined, limit: number): { entries: Row[]; next: number | null } {
    const rows =
      before === undefined
        ? this.q.page.all({ walletId, limit: limit + 1 })
        : this.q.pageBefore.all({ walletId, before, limit: limit + 1 });
    const more = rows.length > limit;
    const page = rows.slice(0, limit);
    return { entries: page, next: more ? page.at(-1)!.id : null };
  }

  /**
   * Charges with an id above `afterId` and at most `upTo` (the checkpoint: below it no entry is
   * missing), in id order (orphan reconciliation). Selected by id only: the caller advances its
   * cursor on the same order, so no charge can fall behind the cursor.
   */
  chargesAfter(afterId: number, upTo: number, limit = 500): Row[] {
    return this.q.chargesAfter.all({ afterId, upTo, limit });
  }

  orphanCursor(): number {
    return Number(this.getMeta.get('orphanCursor')?.value ?? 0);
  }

  setOrphanCursor(id: number): void {
    this.setMeta.run('orphanCursor', String(id));
  }

  /** Every top-up credit, oldest first (reconciliation with the Lightning node). */
  topupCredits(): Row[] {
    return this.q.topupCredits.all();
  }

  count(): number {
    return this.q.count.get()!.n;
  }

  /** The file's database, for the other state the wallet keeps beside the projection (topups-kept.ts). */
  get database(): Database.Database {
    return this.sqlite;
  }

  /** Kept on disk for the next start (the lock goes with the connection). */
  close(): void {
    this.sqlite.close();
  }
}

/** Up to session 15 each start made `ledger-<instance id>.sqlite`; a crashed one left its file behind. */
function removeOldPerInstanceFiles(dir: string) {
  for (const f of readdirSync(dir)) if (/^ledger-wallet-.*\.sqlite(-wal|-shm)?$/.test(f)) rmSync(join(dir, f), { force: true });
}
