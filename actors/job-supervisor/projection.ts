// The supervisor's SQLite projection of the `jobs` bucket, kept in a file beside a checkpoint: the
// bucket's store (its stream's creation time) and the last stream sequence (KV revision) applied.
// It holds what its queries need (wallet, id, created time, state, deadlines, the names of kept
// files): a wallet's jobs newest first, and the sweeps' due lists, each an ordered index read from
// its head; and beside them the documents of each wallet's newest jobs (kept-docs.ts), so a list
// reads no document from the bucket. It follows the archive of finished jobs too
// (shared/jobs/archive.ts): a row whose document moved there holds its sequence (`archive_seq`),
// and the archive's own checkpoint is kept beside the bucket's. At start it resumes both from their
// checkpoints (the tail only); a file that is missing, of another store, of another layout, or ahead
// of a stream is thrown away and rebuilt from the bucket's last values and the archive in the
// background. Readers of a list are told (service_unavailable) while it is rebuilt or behind, never
// answered from a part. Here: following the streams; projection-schema.ts: tables, statements,
// file slot; projection-reads.ts: the list and due lists.
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import type { KV, KvWatchEntry } from '@nats-io/kv';
import { DeliverPolicy, JetStreamApiError, type JetStreamManager, type JsMsg } from '@nats-io/jetstream';
import { STREAMS } from '../../shared/names.ts';
import { archivedRevision } from '../../shared/jobs/archive.ts';
import { decodeJob, encodeJob } from '../../shared/jobs/store.ts';
import type { Logger } from '../../shared/log.ts';
import { ApiError } from '../../shared/errors.ts';
import { AppliedUpTo, freshRead } from '../../shared/nats/fresh.ts';
import type { JobRecord } from '../../shared/protocol/jobs.ts';
import { KeptDocs, PAGE_SIZE } from './kept-docs.ts';
import {
  claimSlot,
  DDL,
  distrustArchive,
  distrustBucket,
  LAYOUT,
  META_DDL,
  prepareStatements,
  releaseSlot,
  rowOf,
} from './projection-schema.ts';
import { ProjectionReads } from './projection-reads.ts';
import { Follower } from './follow.ts';

/** Job documents kept in memory, newest writes first: the guess for a compare-and-set write. */
const RECENT_DOCS = 2000;
/** Changes applied per SQLite transaction (one commit per batch, not per change). */
const BATCH = 1000;
const SYNC_WAIT_MS = 2000;
const STALL_MS = 3000;
/** A rebuild's watch (or archive consumer) that delivers nothing this long is started again from the checkpoint. */
const REBUILD_STALL_MS = 10_000;

export interface ProjectionOptions {
  /** Folder of the projection files (a slot per live instance). */
  dir: string;
  /** How long a finished job's document is kept after its results expired (retention.jobRecords). */
  keepMs: number;
  log: Logger;
  /** Tests: REBUILD_STALL_MS. */
  rebuildStallMs?: number;
}

export class JobProjection extends ProjectionReads {
  readonly file: string;
  private applied = new AppliedUpTo(0);
  /** The archive stream's sequence applied. */
  private archived = new AppliedUpTo(0);
  private archivePending: { seq: number; revision: number; doc: string }[] = [];
  private archiveFollow?: Follower<JsMsg>;
  private archiveLoop?: Promise<void>;
  /** Both followers reached their stream's end as it was at start (a rebuild is complete only then). */
  private kvAtEnd = false;
  private archiveAtEnd = false;
  private freshArchiveLast!: () => Promise<number>;
  /** True once the table holds every job of the bucket (a rebuild has finished, or the file was whole). */
  complete = false;
  /** How the start went: resumed from a checkpoint, or rebuilt (and why). */
  startedAs: { mode: 'resumed' | 'rebuilt'; reason?: string; from: number } = { mode: 'resumed', from: 0 };
  /** Changes applied since the start (a resume applies only the tail). */
  appliedCount = 0;
  private recent = new Map<string, { doc: string; revision: number }>();
  private pending: KvWatchEntry[] = [];
  private flushing = false;
  private stopped = false;
  private kvFollow?: Follower<KvWatchEntry>;
  private loop?: Promise<void>;
  private markCaughtUp!: () => void;
  /** Resolves once the copy has reached both streams' ends as they were at start (the catch-up is over). */
  readonly caughtUp = new Promise<void>((r) => (this.markCaughtUp = r));
  private storeId = '';
  private freshLast!: () => Promise<number>;
  /** True when the stream holds no job message after `seq` (the ones after it were deleted). */
  private nothingAfter!: (seq: number) => Promise<boolean>;

  private readonly o: ProjectionOptions;
  constructor(o: ProjectionOptions) {
    super();
    this.o = o;
    this.file = claimSlot(o.dir);
  }

  /**
   * Open the file (emptied when `fresh`). A file of another layout is emptied before its tables are
   * touched (this code's statements cannot be prepared on them): returns why, else ''.
   */
  private open(fresh: boolean): string {
    if (fresh) for (const f of [this.file, `${this.file}-wal`, `${this.file}-shm`]) rmSync(f, { force: true });
    this.sqlite = new Database(this.file);
    // only a file without tables takes it (before WAL, which fixes the page size)
    if (fresh) this.sqlite.pragma(`page_size = ${PAGE_SIZE}`);
    this.sqlite.pragma('journal_mode = WAL');
    this.sqlite.pragma('synchronous = NORMAL'); // a lost tail is replayed from the stream
    this.sqlite.exec(META_DDL);
    const layout = this.sqlite.prepare(`SELECT v FROM meta WHERE k = 'layout'`).pluck().get() as string | undefined;
    if (!fresh && layout !== undefined && layout !== String(LAYOUT)) {
      this.sqlite.close();
      this.open(true);
      return `the file has another layout (${layout}; this version's is ${LAYOUT})`;
    }
    this.sqlite.exec(DDL);
    this.q = prepareStatements(this.sqlite);
    this.docs = new KeptDocs(this.sqlite);
    return '';
  }

  /**
   * Open the file, check its checkpoint against the bucket, and start following the bucket from it.
   * Resolves at once; `caughtUp` says when the copy reached the stream's end as it was now.
   */
  async start(kv: KV, jsm: JetStreamManager): Promise<void> {
    const status = await kv.status();
    this.nothingAfter = async (seq) => {
      try {
        await jsm.streams.getMessage(info.config.name, { seq: seq + 1, next_by_subj: `$KV.${status.bucket}.>` } as never);
        return false;
      } catch (e) {
        if (e instanceof JetStreamApiError && e.code === 10037) return true;
        throw e;
      }
    };
    const info = status.streamInfo;
    this.storeId = `${info.config.name} ${info.created}`;
    const last = info.state.last_seq;
    this.freshLast = (
      (f) => async () =>
        (await f()).streamInfo.state.last_seq
    )(freshRead(() => kv.status()));
    const archive = await jsm.streams.info(STREAMS.jobsArchive);
    const archiveStore = `${archive.config.name} ${archive.created}`;
    const archiveLast = archive.state.last_seq;
    // the last sequence the archive holds (0 when it holds none: every copy aged out, nothing to wait for)
    this.freshArchiveLast = ((f) => async () => {
      const st = (await f()).state;
      return st.messages > 0 ? st.last_seq : 0;
    })(freshRead(() => jsm.streams.info(STREAMS.jobsArchive)));
    const why = this.open(false) || distrustBucket(this.q, this.storeId, last) || distrustArchive(this.q, archiveStore, archiveLast);
    if (why) {
      this.o.log.warn({ file: this.file, reason: why }, 'job projection: rebuilding in the background');
      this.sqlite.close();
      this.open(true);
      this.q.setMeta.run('store', this.storeId);
      this.q.setMeta.run('layout', String(LAYOUT));
      this.q.setMeta.run('applied', '0');
      this.q.setMeta.run('archive_store', archiveStore);
      this.q.setMeta.run('archive_applied', '0');
      this.q.setMeta.run('complete', '0');
      this.startedAs = { mode: 'rebuilt', reason: why, from: 0 };
    } else {
      this.startedAs = { mode: 'resumed', from: Number(this.q.meta.get('applied')) };
    }
    this.complete = this.q.meta.get('complete') === '1';
    const from = Number(this.q.meta.get('applied') ?? 0);
    this.applied.reset(from);
    // nothing left after the checkpoint (deleted by the retention, or an empty bucket): caught up already
    const archiveFrom = Number(this.q.meta.get('archive_applied') ?? 0);
    this.archived.reset(archiveFrom);
    if (archive.state.messages === 0 || archiveLast <= archiveFrom) this.archiveReached(Math.max(archiveFrom, archiveLast), true);
    if (last <= from || (await this.nothingAfter(from))) this.reached(Math.max(from, last), true);
    this.loop = this.follow(kv, last);
    this.archiveLoop = this.followArchive(jsm);
  }

  /**
   * Follow the archive from its checkpoint until stopped: each archived document points its row at
   * its sequence (inserting the row when a rebuild meets a job no longer in the bucket).
   */
  private async followArchive(jsm: JetStreamManager) {
    // as the bucket's watch (follow): a consumer that stops delivering before the end it had to
    // reach is started again from the checkpoint
    this.archiveFollow = new Follower<JsMsg>({
      open: async () => {
        const c = await jsm
          .jetstream()
          .consumers.get(STREAMS.jobsArchive, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: this.archived.seq + 1 });
        return c.consume({ max_messages: BATCH });
      },
      take: (m) => {
        this.archivePending.push({ seq: m.seq, revision: archivedRevision(m.headers), doc: m.string() });
        const end = m.info.pending === 0;
        if (end || this.archivePending.length >= BATCH) {
          this.flushArchive(end);
          return new Promise<void>((r) => setImmediate(r));
        }
      },
      between: () => this.flushArchive(false),
      stopped: () => this.stopped,
      done: () => this.archiveAtEnd,
      stallMs: this.o.rebuildStallMs ?? REBUILD_STALL_MS,
      applied: () => this.archived.seq,
      log: this.o.log,
      stalledMsg: 'job projection: the archive consumer delivers nothing; started again from the checkpoint',
      failedMsg: 'job projection: archive consumer failed; resuming from the checkpoint',
    });
    await this.archiveFollow.run();
    this.archived.wakeAll();
  }

  /** Apply the archived documents delivered, in one transaction with the archive's checkpoint. */
  private flushArchive(end: boolean) {
    if (!this.sqlite.open) return;
    const batch = this.archivePending;
    this.archivePending = [];
    let top = this.archived.seq;
    if (batch.length) {
      this.sqlite.transaction(() => {
        for (const a of batch) {
          try {
            this.upsert(decodeJob(a.doc), a.revision, a.doc, a.seq);
          } catch (err) {
            this.o.log.error({ err, seq: a.seq }, 'job projection: bad archived job record skipped');
          }
          top = Math.max(top, a.seq);
        }
        this.appliedCount += batch.length;
        this.q.setMeta.run('archive_applied', String(top));
      })();
    }
    this.archiveReached(top, end);
  }

  private archiveReached(seq: number, end: boolean) {
    this.archived.reach(seq);
    if (end && !this.archiveAtEnd) {
      this.archiveAtEnd = true;
      this.completeIfBoth();
    }
  }

  /**
   * True until both followers have applied what their streams held at start: a copy resumed from
   * an old checkpoint (a supervisor that was down while others worked) catches up in the background
   * meanwhile, and what needs the whole copy answers service_unavailable (sync, archivedAt).
   */
  get catchingUp(): boolean {
    return !this.kvAtEnd || !this.archiveAtEnd;
  }

  /** A rebuild is complete once both followers have reached the ends their streams had at start. */
  private completeIfBoth() {
    if (!this.kvAtEnd || !this.archiveAtEnd) return;
    this.markCaughtUp();
    if (this.complete) return;
    if (this.sqlite.open) this.q.setMeta.run('complete', '1');
    this.complete = true;
    if (this.startedAs.mode === 'rebuilt') this.o.log.info({ file: this.file, jobs: this.count() }, 'job projection: rebuilt');
  }

  /** Follow the bucket from the checkpoint until stopped; a watch that ends starts again from where it got. */
  private async follow(kv: KV, startLast: number) {
    // until the list is complete the watchdog (follow.ts) restarts a silent watch; after that sync() does
    this.kvFollow = new Follower<KvWatchEntry>({
      // a fresh file takes each key's last value (LastPerSubject, in stream order); a checkpoint resumes after it
      open: () => {
        const from = this.applied.seq;
        return kv.watch(from > 0 ? { resumeFromRevision: from + 1 } : {});
      },
      take: (e) => {
        this.pending.push(e);
        const full = this.pending.length >= BATCH;
        if (full) this.flush();
        else if (!this.flushing) {
          this.flushing = true;
          setImmediate(() => this.flush());
        }
        if (e.delta === 0 && e.revision >= startLast) this.flush();
        // a rebuild's buffered values arrive as microtasks: let I/O (requests, sweeps) in between batches
        if (full) return new Promise<void>((r) => setImmediate(r));
      },
      stopped: () => this.stopped,
      done: () => this.complete,
      stallMs: this.o.rebuildStallMs ?? REBUILD_STALL_MS,
      applied: () => this.applied.seq,
      log: this.o.log,
      stalledMsg: "job projection: the rebuild's watch delivers nothing; started again from the checkpoint",
      failedMsg: 'job projection: watch failed; resuming from the checkpoint',
    });
    await this.kvFollow.run();
    this.flush();
    this.stopped = true;
    this.applied.wakeAll();
  }

  /** Apply what the watch delivered, in one transaction with the checkpoint. */
  private flush() {
    this.flushing = false;
    if (!this.pending.length || !this.sqlite.open) return;
    const batch = this.pending;
    this.pending = [];
    let top = this.applied.seq;
    let end = false;
    this.sqlite.transaction(() => {
      for (const e of batch) {
        try {
          if (e.operation === 'PUT' && e.value.length) this.upsert(decodeJob(e.value), e.revision, e.string());
          else {
            this.docs.dropOf(e.key);
            this.q.remove.run(e.key);
            this.recent.delete(e.key);
          }
        } catch (err) {
          this.o.log.error({ err, key: e.key }, 'job projection: bad job record skipped');
        }
        top = Math.max(top, e.revision);
        if (e.delta === 0) end = true;
      }
      this.appliedCount += batch.length;
      this.q.setMeta.run('applied', String(top));
    })();
    this.reached(top, end);
  }

  private reached(seq: number, end: boolean) {
    this.applied.reach(seq);
    if (end && !this.kvAtEnd) {
      this.kvAtEnd = true;
      this.completeIfBoth();
    }
  }

  /**
   * The row a document makes: its deadlines are the sweeps' due lists. `archiveSeq`: the document
   * is the archive's copy at that sequence (the row is replaced by it at the same revision too).
   */
  upsert(job: JobRecord, revision: number, doc = encodeJob(job), archiveSeq?: number): void {
    const placed = this.docs.place(job);
    const changed =
      this.q[archiveSeq === undefined ? 'upsert' : 'archive'].run(rowOf(job, revision, this.o.keepMs, archiveSeq)).changes > 0;
    this.docs.written(job, doc, placed, changed);
    const had = this.recent.get(job.id);
    if (!had || had.revision < revision) {
      this.recent.delete(job.id);
      this.recent.set(job.id, { doc, revision });
      if (this.recent.size > RECENT_DOCS) this.recent.delete(this.recent.keys().next().value!);
    }
  }

  /**
   * Wait (at most 2 s) until the copy holds every job write acknowledged before the call; throws
   * service_unavailable when it cannot (being rebuilt, or behind), so no reader gets a part.
   */
  async sync(maxWaitMs = SYNC_WAIT_MS): Promise<void> {
    if (!this.complete)
      throw new ApiError(
        'service_unavailable',
        'the job list is being rebuilt after a restart; retry in a few seconds',
        { retryAfter: 5 },
        {
          'retry-after': '5',
        },
      );
    // resumed from an old checkpoint: a part until the tail written meanwhile is applied (both streams)
    if (this.catchingUp)
      throw new ApiError(
        'service_unavailable',
        'the job list is catching up with what was written while this instance was stopped; retry in a few seconds',
        { retryAfter: 5 },
        { 'retry-after': '5' },
      );
    const last = await this.freshLast();
    if (last <= this.applied.seq) return;
    if (await this.applied.reached(last, Math.min(200, maxWaitMs))) return;
    // the last messages may have been deleted (a document past its retention): nothing to wait for
    if (!this.pending.length && (await this.nothingAfter(this.applied.seq))) {
      if (this.complete) this.applied.reach(last);
      return;
    }
    if (await this.applied.reached(last, maxWaitMs)) return;
    // a watch that delivered nothing for a while: start it again from the checkpoint
    this.kvFollow?.restartIfSilent(STALL_MS);
    throw new ApiError(
      'service_unavailable',
      'the job list is catching up with the job store; retry in a few seconds',
      { retryAfter: 2 },
      {
        'retry-after': '2',
      },
    );
  }

  /** The job as this instance last saw it in the bucket (recent writes only), with its revision. */
  getStored(id: string): { job: JobRecord; revision: number } | null {
    const r = this.recent.get(id);
    return r ? { job: decodeJob(r.doc), revision: r.revision } : null;
  }

  /**
   * The archive sequence of a job's document, or null when it is not archived. A job missing from
   * the bucket may have been archived a moment ago by another instance: the archive is followed up
   * to its current end first (at most `maxWaitMs`). Until this copy has read the archive that far
   * (a rebuild, or a start behind it) a job it does not know is not known to be absent: that throws
   * service_unavailable with a retry time, as the list does, instead of answering "no such job".
   */
  async archivedAt(id: string, maxWaitMs = SYNC_WAIT_MS): Promise<number | null> {
    const seq = () => this.row(id)?.archive_seq ?? null;
    const now = seq();
    if (now !== null) return now;
    const last = await this.freshArchiveLast();
    if (last > this.archived.seq && !(await this.archived.reached(last, maxWaitMs)) && seq() === null) {
      this.archiveFollow?.restartIfSilent(STALL_MS);
      throw new ApiError(
        'service_unavailable',
        this.archiveAtEnd
          ? 'the archive of finished jobs is catching up; retry in a few seconds'
          : 'the archive of finished jobs is being read after a restart; retry in a few seconds',
        { retryAfter: this.archiveAtEnd ? 2 : 5 },
        { 'retry-after': this.archiveAtEnd ? '2' : '5' },
      );
    }
    return seq();
  }

  /** The row is gone with its document (deleted by sequence: no marker comes through the watch). */
  forgotten(id: string, revision: number): void {
    this.sqlite.transaction(() => {
      this.docs.dropOf(id, revision);
      this.q.removeAt.run(id, revision);
    })();
    this.recent.delete(id);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.kvFollow?.stopCurrent();
    this.archiveFollow?.stopCurrent();
    await this.loop;
    await this.archiveLoop;
    if (this.sqlite?.open) {
      this.flush();
      this.flushArchive(false);
      this.sqlite.close();
    }
    releaseSlot(this.file);
  }
}
