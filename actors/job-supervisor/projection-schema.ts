// The projection's SQLite file (projection.ts): its tables and layout, the statements every part
// uses, and the file slot an instance holds (one file per live instance in the folder).
import type Database from 'better-sqlite3';
import { mkdirSync, rmSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive } from '../../shared/runtime.ts';
import { isFinished, isUnrefunded, type JobRecord, type JobStatus } from '../../shared/protocol/jobs.ts';
import { isSettled } from '../../shared/jobs/archive.ts';
import { DOCS_DDL, DOC_OF_ROW } from './kept-docs.ts';

/** Bump when the table changes: a file of another layout is rebuilt. */
export const LAYOUT = 8;
export const UPSERT = `INSERT INTO jobs (id, wallet_id, status, created_at, revision, purge_due, webhook_due, forget_due, files, unrefunded, archive_due, archive_seq)
  VALUES (@id, @wallet_id, @status, @created_at, @revision, @purge_due, @webhook_due, @forget_due, @files, @unrefunded, @archive_due, @archive_seq)
  ON CONFLICT (id) DO UPDATE SET wallet_id = excluded.wallet_id, status = excluded.status, created_at = excluded.created_at,
    revision = excluded.revision, purge_due = excluded.purge_due, webhook_due = excluded.webhook_due,
    forget_due = excluded.forget_due, files = excluded.files, unrefunded = excluded.unrefunded,
    archive_due = excluded.archive_due, archive_seq = excluded.archive_seq`;
export const META_DDL = 'CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)';
export const DDL = `
CREATE TABLE IF NOT EXISTS jobs (
  id TEXT PRIMARY KEY, wallet_id TEXT NOT NULL, status TEXT NOT NULL, created_at INTEGER NOT NULL,
  revision INTEGER NOT NULL,
  purge_due INTEGER, webhook_due INTEGER, forget_due INTEGER, files TEXT, unrefunded INTEGER,
  archive_due INTEGER, archive_seq INTEGER) WITHOUT ROWID;
${DOCS_DDL}
CREATE INDEX IF NOT EXISTS jobs_wallet ON jobs (wallet_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS jobs_unfinished ON jobs (status, created_at) WHERE status IN ('queued', 'processing');
CREATE INDEX IF NOT EXISTS jobs_purge ON jobs (purge_due) WHERE purge_due IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_webhook ON jobs (webhook_due) WHERE webhook_due IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_forget ON jobs (forget_due) WHERE forget_due IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_archive ON jobs (archive_due) WHERE archive_due IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_unrefunded ON jobs (unrefunded, created_at) WHERE unrefunded IS NOT NULL;
`;

/** A file slot not used by a live instance: in this process (held) or another (its pid file). */
const held = new Set<string>();
export function claimSlot(dir: string): string {
  mkdirSync(dir, { recursive: true });
  for (let i = 0; ; i++) {
    const file = join(dir, i ? `jobs-${i}.sqlite` : 'jobs.sqlite');
    if (held.has(file)) continue;
    const pidFile = `${file}.pid`;
    const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : 0;
    if (pid && pid !== process.pid && processAlive(pid)) continue;
    writeFileSync(pidFile, String(process.pid));
    held.add(file);
    return file;
  }
}

/** Give the slot back (the process keeps no claim on it). */
export function releaseSlot(file: string): void {
  held.delete(file);
  rmSync(`${file}.pid`, { force: true });
}

export interface Row {
  id: string;
  wallet_id: string;
  status: JobStatus;
  created_at: number;
  revision: number;
  purge_due: number | null;
  webhook_due: number | null;
  forget_due: number | null;
  files: string | null;
  /** When the document is to move to the archive (finished, purged, nothing left to send or refund). */
  archive_due: number | null;
  /** The document's sequence in the archive once it moved there (then the bucket no longer holds it). */
  archive_seq: number | null;
  /** The document as last applied, while the job is one of its wallet's newest LIST_MAX; else null. */
  doc: string | null;
}

export function prepareStatements(s: Database.Database) {
  return {
    meta: s.prepare('SELECT v FROM meta WHERE k = ?').pluck(),
    setMeta: s.prepare('INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v'),
    // a write to the bucket newer than the row: the document is (back) in the bucket
    upsert: s.prepare(`${UPSERT} WHERE jobs.revision < excluded.revision`),
    // an archived copy of the revision the row holds (or a newer one): the row points at it
    archive: s.prepare(`${UPSERT} WHERE jobs.revision <= excluded.revision`),
    archiveDue: s.prepare('SELECT id FROM jobs WHERE archive_due IS NOT NULL AND archive_due <= ? ORDER BY archive_due LIMIT ?').pluck(),
    notArchivable: s.prepare('UPDATE jobs SET archive_due = NULL WHERE id = ?'),
    remove: s.prepare('DELETE FROM jobs WHERE id = ?'),
    removeAt: s.prepare('DELETE FROM jobs WHERE id = ? AND revision <= ?'),
    row: s.prepare(`SELECT jobs.*, docs.doc FROM jobs LEFT JOIN docs ON ${DOC_OF_ROW} WHERE jobs.id = ?`),
    list: s.prepare(
      `SELECT jobs.id, docs.doc FROM jobs LEFT JOIN docs ON ${DOC_OF_ROW} WHERE jobs.wallet_id = ? ORDER BY jobs.created_at DESC, jobs.id DESC LIMIT ?`,
    ),
    unfinished: s
      .prepare(
        `SELECT id FROM jobs WHERE status = ? AND created_at <= ? AND status IN ('queued', 'processing') ORDER BY created_at LIMIT ?`,
      )
      .pluck(),
    purgeDue: s.prepare('SELECT id FROM jobs WHERE purge_due IS NOT NULL AND purge_due <= ? ORDER BY purge_due LIMIT ?').pluck(),
    webhookDue: s.prepare('SELECT id FROM jobs WHERE webhook_due IS NOT NULL AND webhook_due <= ? ORDER BY webhook_due LIMIT ?').pluck(),
    forgetDue: s.prepare('SELECT id, revision FROM jobs WHERE forget_due IS NOT NULL AND forget_due <= ? ORDER BY forget_due LIMIT ?'),
    unrefunded: s.prepare('SELECT id FROM jobs WHERE unrefunded = 1 ORDER BY created_at LIMIT ?').pluck(),
    keptFiles: s.prepare(
      'SELECT id, files FROM jobs WHERE purge_due IS NOT NULL AND purge_due > ? AND files IS NOT NULL ORDER BY purge_due LIMIT ?',
    ),
    count: s.prepare('SELECT count(*) FROM jobs').pluck(),
    countUnfinished: s.prepare(`SELECT count(*) FROM jobs WHERE status IN ('queued', 'processing')`).pluck(),
    oldestUnfinished: s.prepare(`SELECT id, created_at FROM jobs WHERE status IN ('queued', 'processing') ORDER BY created_at LIMIT 1`),
  };
}

export type Statements = ReturnType<typeof prepareStatements>;

/**
 * The row a document makes: its deadlines are the sweeps' due lists. `archiveSeq`: the document is
 * the archive's copy at that sequence. `keepMs`: how long a finished job's record is kept.
 */
export function rowOf(job: JobRecord, revision: number, keepMs: number, archiveSeq?: number) {
  const files =
    job.purgedAt === undefined
      ? job.results.filter((r) => r.status === 'done' && r.file).map((r) => [r.key, r.file!.store, r.file!.name])
      : [];
  const finished = isFinished(job);
  return {
    id: job.id,
    wallet_id: job.walletId,
    status: job.status,
    created_at: job.createdAt,
    revision,
    purge_due: job.purgedAt === undefined ? job.expiresAt : null,
    webhook_due: job.webhook?.state === 'pending' ? Math.max(job.webhook.nextAt ?? 0, job.webhook.claimUntil ?? 0) : null,
    // a document leaves the bucket only once finished and its files are deleted (the purge needs it)
    forget_due: finished && job.purgedAt !== undefined ? Math.max(job.expiresAt, job.finishedAt ?? 0) + keepMs : null,
    files: files.length ? JSON.stringify(files) : null,
    // a finished job with a failed result not refunded (a settle cut short): found again by the sweep
    unrefunded: finished && job.results.some(isUnrefunded) ? 1 : null,
    // nothing will change it any more: it leaves the bucket for the archive (shared/jobs/archive.ts)
    archive_due: isSettled(job) && archiveSeq === undefined ? job.purgedAt! : null,
    archive_seq: archiveSeq ?? null,
  };
}

/** Why the file's bucket checkpoint cannot be trusted, or '' when it can be resumed. */
export function distrustBucket(q: Statements, storeId: string, last: number): string {
  const store = q.meta.get('store') as string | undefined;
  if (store === undefined) return 'no projection file';
  if (store !== storeId) return `the file is of another store (${store}, the bucket is ${storeId})`;
  if (q.meta.get('layout') !== String(LAYOUT)) return 'the file has another layout';
  const applied = Number(q.meta.get('applied'));
  if (!(applied >= 0) || applied > last) return `the file is ahead of the stream (applied ${applied}, the stream ends at ${last})`;
  return '';
}

/** Why the archive checkpoint cannot be trusted (the stream was made again, or is behind it), or ''. */
export function distrustArchive(q: Statements, store: string, last: number): string {
  const had = q.meta.get('archive_store') as string | undefined;
  if (had !== store) return `the file is of another archive (${had ?? 'none'}, the stream is ${store})`;
  const applied = Number(q.meta.get('archive_applied'));
  if (!(applied >= 0) || applied > last) return `the file is ahead of the archive (applied ${applied}, the stream ends at ${last})`;
  return '';
}
