// The top-ups the wallet watches, kept in the projection's file (issue 26): the pending ones, and the
// `topups` bucket revision the watch has seen, written together. At start the watch resumes after
// that revision and the pending top-ups come from the file, instead of every top-up document ever
// made being read again. A file from another bucket (its stream's name and `created` differ), or one
// ahead of the bucket, is emptied and the watch reads every current value, as before.
//
// Beside them, the reconciliation's work list (actors/wallet/reconcile.ts): every top-up whose
// document changed and that the periodic reconciliation has not yet found final at the node (paid
// and credited, expired, failed). The periodic run looks at these only, so its cost follows the
// top-ups of the last minutes, not every top-up ever made. Written in the same transaction as the
// watch's revision, so a restart neither loses an entry nor adds one twice.
import type Database from 'better-sqlite3';

const DDL = `
CREATE TABLE IF NOT EXISTS topups_pending (id TEXT PRIMARY KEY, payment_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS topups_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS topups_unreconciled (id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS topups_unpaid (id TEXT PRIMARY KEY, ended_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS topups_unpaid_ended ON topups_unpaid (ended_at);
`;

export class KeptTopups {
  private put: Database.Statement<[string, string]>;
  private del: Database.Statement<[string]>;
  private setMeta: Database.Statement<[string, string]>;
  private toReconcile: Database.Statement<[string]>;
  private reconciledOne: Database.Statement<[string]>;
  private seenTx: (revision: number, id: string, paymentHash: string | null, reconcile: boolean, unpaidEndedAt: number | null) => void;
  private putUnpaid: Database.Statement<[string, number]>;
  private delUnpaid: Database.Statement<[string]>;

  private db: Database.Database;
  constructor(db: Database.Database) {
    this.db = db;
    db.exec(DDL);
    this.put = db.prepare(
      'INSERT INTO topups_pending (id, payment_hash) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET payment_hash = excluded.payment_hash',
    );
    this.del = db.prepare('DELETE FROM topups_pending WHERE id = ?');
    this.setMeta = db.prepare('INSERT INTO topups_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
    this.toReconcile = db.prepare('INSERT INTO topups_unreconciled (id) VALUES (?) ON CONFLICT (id) DO NOTHING');
    this.reconciledOne = db.prepare('DELETE FROM topups_unreconciled WHERE id = ?');
    this.putUnpaid = db.prepare(
      'INSERT INTO topups_unpaid (id, ended_at) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET ended_at = excluded.ended_at',
    );
    this.delUnpaid = db.prepare('DELETE FROM topups_unpaid WHERE id = ?');
    this.seenTx = db.transaction(
      (revision: number, id: string, paymentHash: string | null, reconcile: boolean, unpaidEndedAt: number | null) => {
        if (paymentHash) this.put.run(id, paymentHash);
        else this.del.run(id);
        if (unpaidEndedAt !== null) this.putUnpaid.run(id, unpaidEndedAt);
        else this.delUnpaid.run(id);
        if (reconcile) this.toReconcile.run(id);
        this.setMeta.run('revision', String(revision));
      },
    );
  }

  /**
   * Where the watch resumes, with the pending top-ups kept, or null (then everything kept is gone
   * and the watch reads every current value): a new file, another bucket, or one ahead of it.
   */
  resume(bucket: {
    stream: string;
    created: string;
    lastSeq: number;
  }): { revision: number; pending: { id: string; paymentHash: string }[] } | null {
    const meta = new Map(
      (this.db.prepare('SELECT key, value FROM topups_meta').all() as { key: string; value: string }[]).map((r) => [r.key, r.value]),
    );
    const revision = Number(meta.get('revision') ?? 0);
    if (meta.get('stream') === bucket.stream && meta.get('created') === bucket.created && revision > 0 && revision <= bucket.lastSeq) {
      const pending = this.db.prepare('SELECT id, payment_hash AS paymentHash FROM topups_pending').all() as {
        id: string;
        paymentHash: string;
      }[];
      return { revision, pending };
    }
    this.db.transaction(() => {
      this.db.exec('DELETE FROM topups_pending; DELETE FROM topups_meta; DELETE FROM topups_unreconciled; DELETE FROM topups_unpaid;');
      this.setMeta.run('stream', bucket.stream);
      this.setMeta.run('created', bucket.created);
    })();
    return null;
  }

  /**
   * A watched change: the top-up is pending (its payment hash) or not (null), up to this revision;
   * `reconcile`: it goes on the reconciliation's work list (a document deleted does not).
   */
  seen(revision: number, id: string, paymentHash: string | null, reconcile: boolean, unpaidEndedAt: number | null = null): void {
    this.seenTx(revision, id, paymentHash, reconcile, unpaidEndedAt);
  }

  /** Top-ups that ended unpaid (expired, failed) before `before` (ms), oldest first, at most `limit`: due to leave the bucket. */
  unpaidEndedBefore(before: number, limit: number): string[] {
    return (
      this.db.prepare('SELECT id FROM topups_unpaid WHERE ended_at < ? ORDER BY ended_at LIMIT ?').all(before, limit) as { id: string }[]
    ).map((r) => r.id);
  }

  /** The top-up's document left the bucket. */
  unpaidGone(id: string): void {
    this.delUnpaid.run(id);
  }

  /** The reconciliation's work list, oldest entry first. */
  unreconciled(): string[] {
    return (this.db.prepare('SELECT id FROM topups_unreconciled ORDER BY rowid').all() as { id: string }[]).map((r) => r.id);
  }

  /** The `topups` stream sequence the reconciliation's rolling pass has reached (0: none yet). */
  sweptTo(): number {
    const r = this.db.prepare("SELECT value FROM topups_meta WHERE key = 'swept'").get() as { value: string } | undefined;
    return Number(r?.value ?? 0);
  }

  sweep(seq: number): void {
    this.setMeta.run('swept', String(seq));
  }

  /** The node's word on the top-up is final and the ledger agrees: off the work list (until its document changes again). */
  reconciled(id: string): void {
    this.reconciledOne.run(id);
  }
}
