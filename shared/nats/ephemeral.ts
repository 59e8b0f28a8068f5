// Ephemeral consumers left behind when every client of a cluster has stopped.
//
// Every KV watch and ordered read is an ephemeral consumer (no durable name). The server deletes one
// only after its inactive threshold with no client on it: 5 minutes as nats.js sets it. A cluster
// stopped sooner keeps them in its meta state, and its next start restores each one on its stream's
// leader, rebuilding its position and pending counts (on a 1 M-key bucket or a 3 M-entry ledger, work
// for the very node that must also elect the meta leader); restarts in a row never let them expire.
// Seen at 1 M jobs: 42 restored at one start, the meta leader silent for 66 s, the wallet's consumer
// creation timing out and the start failing (docs/notes/issue-26.md, session 23). The cluster
// launcher stops every actor first, then drops what they left (scripts/cluster-lib.ts).
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';

/** Deletes every consumer without a durable name on every stream; how many were dropped. */
export async function dropEphemeralConsumers(nc: NatsConnection): Promise<number> {
  const jsm = await jetstreamManager(nc, { timeout: 2000, checkAPI: false });
  let dropped = 0;
  for await (const s of jsm.streams.list()) {
    const gone: Promise<unknown>[] = [];
    for await (const c of jsm.consumers.list(s.config.name)) {
      if (c.config.durable_name) continue;
      gone.push(
        jsm.consumers.delete(s.config.name, c.name).then(
          () => {
            dropped++;
          },
          () => {},
        ),
      );
    }
    await Promise.all(gone);
  }
  return dropped;
}
