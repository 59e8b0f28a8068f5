// Whether the ledger projection's checkpoint can be trusted against the LEDGER stream at start
// (actors/wallet/ledger.ts): a reason not to (then it is rebuilt from sequence 1), or null.
import type { JetStreamManager, StreamInfo } from '@nats-io/jetstream';
import { STREAMS, subjects } from '../../shared/names.ts';
import type { LedgerMessage } from '../../shared/protocol/wallet.ts';
import type { Projection } from './projection.ts';

/** The projection's newest rows compared with the stream's at start. */
const CHECKED_ROWS = 20;

export async function distrust(projection: Projection, info: StreamInfo, jsm: JetStreamManager): Promise<string | null> {
  const cp = projection.checkpoint();
  const s = info.state;
  if (!cp) return 'no checkpoint (a new file)';
  if (cp.stream !== info.config.name || cp.created !== info.created)
    return `another stream (${cp.stream} created ${cp.created}, the ledger is ${info.config.name} created ${info.created})`;
  if (cp.applied > s.last_seq) return `the checkpoint ${cp.applied} is ahead of the stream's last sequence ${s.last_seq}`;
  if (cp.applied > 0 && s.messages > 0 && s.first_seq > cp.applied + 1)
    return `the stream's first sequence ${s.first_seq} moved past the checkpoint ${cp.applied}`;
  // The newest rows must still be the stream's entries: a store restored from another copy can
  // share the stream's name and creation time, and writes a crash lost (acknowledged before they
  // were on disk, or deleted by a repair while the wallet was down) are the stream's newest.
  for (const row of projection.newest(CHECKED_ROWS)) {
    const m = await jsm.streams.getMessage(STREAMS.ledger, { seq: row.id }).catch(() => null);
    if (!m) return `the entry ${row.id} of the projection is gone from the stream`;
    const e = m.json<LedgerMessage>();
    if (m.subject !== subjects.ledger(row.walletId) || e.ref !== row.ref || e.balanceAfter !== row.balanceAfter)
      return `the entry ${row.id} differs from the stream's`;
  }
  return null;
}
