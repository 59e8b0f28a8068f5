// A SQLite (drizzle) projection of the `jobs` bucket: answers "a wallet's recent jobs, newest first"
// and feeds the sweeps (stale, stuck, expired jobs). It is rebuilt from a KV watch on every start
// (shared/nats/kv-mirror.ts: replaced when it lags or ends) and is never the only copy of anything.
import Database from 'better-sqlite3';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { sqliteTable, text, integer } from 'drizzle-orm/sqlite-core';
import { and, desc, eq, inArray, isNull, lte, lt, gt, sql } from 'drizzle-orm';
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
  /**
   * The statements run per job-document change (the watch's upsert/delete) and per outcome (the
   * copy read), prepared once: drizzle built the SQL and better-sqlite3 prepared it on every call,
   * which showed in the supervisor's profile on the path from an outcome to its document write.
   */
  private readonly q: ReturnType<JobProjection['prepare']>;
  /** Resolves once every job that existed at start is in the table. */
  ready!: Promise<void>;

  constructor(private log: Logger) {
    // in memory: rebuilt from the bucket on start, so a file would only be a stale second copy
    this.sqlite = new Database(':memory:');
    this.sqlite.exec(DDL);
    this.db = drizzle(this.sqlite);
    this.q = this.prepare();
  }

  private prepare() {
    const p = (name: string) => sql.placeholder(name);
    const excluded = (col: string) => sql.raw(`excluded.${col}`);
    return {
      // keeps the highest revision: a replayed or late older record changes nothing
      upsert: this.db.insert(jobsTable).values({
        id: p('id'), walletId: p('walletId'), service: p('service'), status: p('status'), createdAt: p('createdAt'),
        startedAt: p('startedAt'), expiresAt: p('expiresAt'), purgedAt: p('purgedAt'), revision: p('revision'),
        webhookDue: p('webhookDue'), doc: p('doc'),
      }).onConflictDoUpdate({
        target: jobsTable.id,
        set: {
          walletId: excluded('wallet_id'), service: excluded('service'), status: excluded('status'), createdAt: excluded('created_at'),
          startedAt: excluded('started_at'), expiresAt: excluded('expires_at'), purgedAt: excluded('purged_at'), revision: excluded('revision'),
          webhookDue: excluded('webhook_due'), doc: excluded('doc'),
        },
        where: lt(jobsTable.revision, excluded('revision')),
      }).prepare(),
      remove: this.db.delete(jobsTable).where(eq(jobsTable.id, p('id'))).prepare(),
      stored: this.db.select({ doc: jobsTable.doc, revision: jobsTable.revision }).from(jobsTable).where(eq(jobsTable.id, p('id'))).prepare(),
    };
  }

  async start(kv: KV): Promise<void> {
    // upserts keep the highest revision, so a replaced watch delivering every job again is harmless
    this.mirror = new KvMirror(kv, (e) => {
      try {
        if (e.operation === 'PUT' && e.value.length) this.upsert(e.json<JobRecord>(), e.revision);
        else this.q.remove.run({ id: e.key });
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
    this.q.upsert.run({
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
    });
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
    const r = this.q.stored.get({ id });
    return r ? { job: JSON.parse(r.doc) as JobRecord, revision: r.revision } : null;
  }

  get(id: string): JobRecord | null {
    return this.getStored(id)?.job ?? null;
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
