// Are compare-and-set writes on a replicated KV bucket really exclusive on this nats-server?
// Starts a throwaway 3-node cluster, then in every round six connections (two per node) update one
// key on the same revision at once: exactly one may be stored. Reports it for the plain KV update
// and for shared/nats/cas.ts (which the service uses).
//   node --import tsx scripts/diagnostics/cas-check.ts [rounds]
import { pathToFileURL } from 'node:url';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kvm, type KV } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { startNatsCluster, type NatsCluster } from '../cluster-lib.ts';
import { kvCasPut, isCasConflict } from '../../shared/nats/cas.ts';
import { transientKind } from '../../shared/nats/transient.ts';

export interface CasRounds {
  rounds: number;
  /** Rounds in which more than one of the concurrent writers was told it had written. */
  moreThanOneAccepted: number;
  /** Rounds in which nobody got in (would be a livelock). */
  noneAccepted: number;
  /** Rounds in which the stored value is not the one of the single writer told it had written. */
  winnerNotStored: number;
  /** Answers that were neither a write nor a conflict: a passing unavailability as its kind
   *  ('timeout', or 'unanswered': no responders while the stream's interest or leader settles, the
   *  write had no effect), anything else as its message. */
  otherErrors: string[];
}

type Write = (kv: KV, key: string, value: string, base: number) => Promise<number>;
const plain: Write = (kv, key, value, base) => (base ? kv.update(key, value, base) : kv.create(key, value));

/** `rounds` rounds of concurrent writes on one revision through `write`, on bucket `bucket` (R3). */
export async function casRounds(cluster: NatsCluster, bucket: string, write: Write, rounds: number): Promise<CasRounds> {
  const ncs = await Promise.all([...cluster.nodes, ...cluster.nodes].map((n) => connect({ servers: n.url, name: 'cas-check' })));
  try {
    await new Kvm(ncs[0]!).create(bucket, { replicas: cluster.nodes.length, history: 1 });
    const kvs = await Promise.all(ncs.map((nc) => new Kvm(nc).open(bucket)));
    const r: CasRounds = { rounds, moreThanOneAccepted: 0, noneAccepted: 0, winnerNotStored: 0, otherErrors: [] };
    for (let i = 0; i < rounds; i++) {
      const key = `k${i % 10}`;
      const base = (await kvs[0]!.get(key))?.revision ?? 0;
      const answers = await Promise.allSettled(kvs.map((kv, w) => write(kv, key, `${i}-${w}`, base)));
      const won = answers.flatMap((a, w) => (a.status === 'fulfilled' ? [{ w, rev: a.value }] : []));
      for (const a of answers)
        if (a.status === 'rejected' && !isCasConflict(a.reason))
          r.otherErrors.push(transientKind(a.reason) ?? String(a.reason?.message ?? a.reason));
      if (won.length > 1) r.moreThanOneAccepted++;
      if (won.length === 0) r.noneAccepted++;
      if (won.length === 1) {
        const stored = await kvs[0]!.get(key);
        if (stored?.string() !== `${i}-${won[0]!.w}`) r.winnerNotStored++;
      }
    }
    return r;
  } finally {
    await Promise.all(ncs.map((nc) => nc.close()));
  }
}

export const WRITES = { plain, cas: kvCasPut as Write };

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const rounds = Number(process.argv[2] ?? 300);
  const dir = mkdtempSync(join(tmpdir(), 'payloads-cas-'));
  const cluster = await startNatsCluster({ dataDir: dir });
  try {
    console.log(
      JSON.stringify(
        { kvUpdate: await casRounds(cluster, 'plain', plain, rounds), sharedNatsCas: await casRounds(cluster, 'cas', kvCasPut, rounds) },
        null,
        2,
      ),
    );
  } finally {
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
