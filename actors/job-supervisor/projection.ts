// A SQLite (drizzle) projection of the `jobs` bucket: answers "a wallet's recent jobs, newest first"
// and feeds the sweeps (stale, stuck, expired jobs). It is rebuilt from a KV watch on every start
// (shared/nats/kv-mirror.ts: replaced when it lags or ends) and is never the only copy of anything.
import Database from 'better-sqlite3';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { sqliteTable, text, integer } from 'drizzle-orm/sqlite-core';
import { and, desc, eq, inArray, isNull, lte, lt, gt } from 'drizzle-orm';
import type { KV } from '@nats-io/kv';
import type { Logger } from '../../shared/log.ts';
import { KvMirror } from '../../shared/nats/kv-mirror.ts';
import type { JobRecord, JobStatus } from '../../shared/protocol/jobs.ts';

export const jobsTable = sqliteTable('jobs', {
  id: text('id').primaryKey(),
  walletId: text('wallet_id').notNull(),
  service: text('service').notNull(),
  status: text('status').notNull(),
  createdAt: integer('created_at').notNull(),
  startedAt: integer('started_at'),
  expiresAt: integer('expires_at').notNull(),
  purgedAt: integer('purged_at'),
  revision: integer('revision').notNull(),
  /** When a pending webhook is due (its next attempt or the end of a claim); null when none is. */
  webhookDue: integer('webhook_due'),
  doc: text('doc').notNull(),
});

const DDL = `
CREATE TABLE IF NOT EXISTS jobs (
  id TEXT PRIMARY KEY, wallet_id TEXT NOT NULL, service TEXT NOT NULL, status TEXT NOT NULL,
  created_at INTEGER NOT NULL, started_at INTEGER, expires_at INTEGER NOT NULL, purged_at INTEGER,
  revision INTEGER NOT NULL, webhook_due INTEGER, doc TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS jobs_webhook ON jobs (webhook_due) WHERE webhook_due IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_wallet ON jobs (wallet_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status, created_at);
CREATE INDEX IF NOT EXISTS jobs_expiry ON jobs (purged_at, expires_at);
`;

export class JobProjection {
  private sqlite: Database.Database;
  private db: BetterSQLite3Database;
  private mirror: KvMirror | null = null;
  /** Resolves once every job that existed at start is in the table. */
  ready!: Promise<void>;

  constructor(private log: Logger) {
    // in memory: rebuilt from the bucket on start, so a file would only be a stale second copy
    this.sqlite = new Database(':memory:');
    this.sqlite.exec(DDL);
    this.db = drizzle(this.sqlite);
  }

  async start(kv: KV): Promise<void> {
    // upserts keep the highest revision, so a replaced watch delivering every job again is harmless
    this.mirror = new KvMirror(kv, (e) => {
      try {
        if (e.operation === 'PUT' && e.value.length) this.upsert(e.json<JobRecord>(), e.revision);
        else this.db.delete(jobsTable).where(eq(jobsTable.id, e.key)).run();
      } catch (err) {
        this.log.error({ err, key: e.key }, 'projection: bad job record skipped');
      }
    }, { log: this.log });
    this.ready = this.mirror.loaded;
  }

  /** Wait (at most 2 s) until the table holds every job write acknowledged before the call. */
  async sync(): Promise<void> {
    await this.mirror?.sync();
  }

  upsert(job: JobRecord, revision: number): void {
    const row = {
      id: job.id,
      walletId: job.walletId,
      service: job.service,
      status: job.status,
      createdAt: job.createdAt,
      startedAt: job.startedAt ?? null,
      expiresAt: job.expiresAt,
      purgedAt: job.purgedAt ?? null,
      revision,
      webhookDue: job.webhook?.state === 'pending' ? Math.max(job.webhook.nextAt ?? 0, job.webhook.claimUntil ?? 0) : null,
      doc: JSON.stringify(job),
    };
    const { id, ...rest } = row;
    this.db.insert(jobsTable).values(row).onConflictDoUpdate({ target: jobsTable.id, set: rest, where: lt(jobsTable.revision, revision) }).run();
  }

  /** A wallet's newest jobs first. */
  list(walletId: string, limit: number): JobRecord[] {
    return this.db.select({ doc: jobsTable.doc }).from(jobsTable)
      .where(eq(jobsTable.walletId, walletId))
      .orderBy(desc(jobsTable.createdAt), desc(jobsTable.id))
      .limit(limit).all().map((r) => JSON.parse(r.doc) as JobRecord);
  }

  /** The job as this copy last saw it, with its revision (a guess for a compare-and-set write). */
  getStored(id: string): { job: JobRecord; revision: number } | null {
    const r = this.db.select({ doc: jobsTable.doc, revision: jobsTable.revision }).from(jobsTable).where(eq(jobsTable.id, id)).get();
    return r ? { job: JSON.parse(r.doc) as JobRecord, revision: r.revision } : null;
  }

  get(id: string): JobRecord | null {
    const r = this.db.select({ doc: jobsTable.doc }).from(jobsTable).where(eq(jobsTable.id, id)).get();
    return r ? (JSON.parse(r.doc) as JobRecord) : null;
  }

  /** Ids of unfinished jobs in a status, created before a time. */
  unfinished(status: JobStatus, createdBefore: number, limit = 500): string[] {
    return this.db.select({ id: jobsTable.id }).from(jobsTable)
      .where(and(eq(jobsTable.status, status), lte(jobsTable.createdAt, createdBefore)))
      .orderBy(jobsTable.createdAt).limit(limit).all().map((r) => r.id);
  }

  /** Ids of jobs past expiresAt whose files are not yet deleted. */
  expired(now: number, limit = 500): string[] {
    return this.db.select({ id: jobsTable.id }).from(jobsTable)
      .where(and(isNull(jobsTable.purgedAt), lte(jobsTable.expiresAt, now)))
      .orderBy(jobsTable.expiresAt).limit(limit).all().map((r) => r.id);
  }

  /** Ids of jobs whose files should still be in the stores: not expired, not purged, past queued. */
  keptFiles(now: number, limit = 10_000): string[] {
    return this.db.select({ id: jobsTable.id }).from(jobsTable)
      .where(and(isNull(jobsTable.purgedAt), gt(jobsTable.expiresAt, now), inArray(jobsTable.status, ['processing', 'completed'])))
      .orderBy(jobsTable.expiresAt).limit(limit).all().map((r) => r.id);
  }

  /** Ids of jobs whose webhook is due and not claimed by a live instance. */
  webhooksDue(now: number, limit = 500): string[] {
    return this.db.select({ id: jobsTable.id }).from(jobsTable)
      .where(lte(jobsTable.webhookDue, now))
      .orderBy(jobsTable.webhookDue).limit(limit).all().map((r) => r.id);
  }

  countByStatus(statuses: JobStatus[]): number {
    return this.db.select({ id: jobsTable.id }).from(jobsTable).where(inArray(jobsTable.status, statuses)).all().length;
  }

  async stop(): Promise<void> {
    await this.mirror?.stop();
    this.sqlite.close();
  }
}
