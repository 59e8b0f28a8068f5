import { connect, credsAuthenticator, type NatsConnection, type Server } from '@nats-io/transport-node';
import { readFileSync } from 'node:fs';
import './request-settled.ts';

export type { NatsConnection };

/** What a connection says about itself: its moves between servers (issue 45: which server, when). */
type ConnLog = { info(o: object, m: string): void; warn(o: object, m: string): void };

export async function connectNats(url: string, name: string, credsFile = '', log?: ConnLog): Promise<NatsConnection> {
  const servers = url
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const authenticator = credsFile ? credsAuthenticator(readFileSync(credsFile)) : undefined;
  // the server a probe found with a quorum: the forced reconnect goes there
  let target: string | null = null;
  const nc = await connect({
    servers,
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    // A server that does not answer a dial (a dead host) costs 2 s, not the default 20 s, and a
    // connection whose server went silent is noticed after 2 pings 5 s apart, not 2 x 2 min.
    timeout: 2000,
    pingInterval: 5000,
    maxPingOut: 2,
    // nats.js's own choice after a forced reconnect is the server being left (Servers.selectServer
    // returns the current one first, issue 45: it took a second round of misses, ~20 s): the server
    // the probe found with a quorum is dialled instead; after a lost connection (null) nats.js's own
    reconnectToServer: (pool: ReadonlyArray<Server>) => {
      const want = target;
      target = null;
      return pool.find((s) => s.listen === want) ?? null;
    },
    // nats.js otherwise builds an Error (a captured stack) for every request and its timeout before
    // it is sent, in case it fails: 10-15% of the gateway's time under load (profile of
    // GET /v1/balance), on every request of every actor. A failed request still says what failed
    // (subject, timeout, no responders); only the caller's stack is left out.
    noAsyncTraces: true,
    ...(authenticator ? { authenticator } : {}),
  });
  if (log) watchStatus(nc, name, log);
  const listens = servers.map((s) => s.replace(/^nats:\/\//, ''));
  if (servers.length > 1)
    leaveServerWithoutQuorum(nc, async (server) => {
      // Move only to a server that has a quorum now, asked over a short-lived connection of its
      // own: when every server misses (the cluster electing its meta leader after a leader was cut
      // off or a partition healed), moving only drops this connection's requests and pulls, and
      // a move "to any other server" went to the cut-off one (session 30, baseline run: the
      // gateway left n3, on the majority, for n1, cut off, 2 s into the fault)
      const others = listens.filter((l) => l !== server);
      const found = await Promise.all(others.map((l) => probeQuorum(l, name, authenticator)));
      const to = others.find((_, i) => found[i]) ?? null;
      if (!to) {
        log?.warn({ connection: name, server }, 'NATS: no server has a JetStream quorum (an election); staying');
        return false;
      }
      log?.warn({ connection: name, server, to }, 'NATS: this server has no JetStream quorum; moving to another');
      target = to;
      return true;
    });
  return nc;
}

/** How long a probe of another server may take (dial + check). */
const PROBE_MS = 1500;

/**
 * Whether the server at `listen` has a JetStream quorum now, asked over a connection of its own,
 * closed after. Stricter than the connection's own check: both streams' leaders answer and have
 * heard a majority of their replicas within PROBE_HEARD_NS, so that a cut-off node that led a
 * stream is not chosen in the first seconds after the cut (its followers still look recent).
 */
async function probeQuorum(listen: string, name: string, authenticator?: ReturnType<typeof credsAuthenticator>): Promise<boolean> {
  let pc: NatsConnection | null = null;
  let over = false;
  const check = (async () => {
    pc = await connect({
      servers: [listen],
      name: `${name}-probe`,
      reconnect: false,
      timeout: PROBE_MS,
      noAsyncTraces: true,
      ...(authenticator ? { authenticator } : {}),
    });
    if (over) await pc.close(); // the probe ran out of time while dialling: nobody else closes it
    return hasQuorum(pc, true);
  })().catch(() => false);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((r) => {
    timer = setTimeout(() => r(false), PROBE_MS + QUORUM_TIMEOUT_MS * 2);
  });
  try {
    return (await Promise.race([check, late])) !== false;
  } finally {
    over = true;
    clearTimeout(timer);
    (pc as NatsConnection | null)?.close().catch(() => {});
  }
}

/** Logs every move of the connection between servers (which server, when). */
function watchStatus(nc: NatsConnection, name: string, log: ConnLog) {
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect' || s.type === 'reconnect' || s.type === 'forceReconnect' || s.type === 'staleConnection')
        log.info({ connection: name, status: s.type, server: (s as { server?: string }).server ?? nc.getServer() }, `NATS ${s.type}`);
    }
  })().catch(() => {});
}

/** How often a connection asks its server whether JetStream answers, and how many misses move it. */
export const QUORUM_CHECK_MS = 1000;
const QUORUM_MISSES = 2;
/** How long one check waits for the meta leader's answer. */
const QUORUM_TIMEOUT_MS = 1000;

/**
 * A server cut off from the cluster's majority by a network partition keeps its client connections
 * healthy, so the client never moves, while every JetStream request through it fails for as long
 * as the partition lasts (partition.test.ts: job creation failed for the whole 30 s 2/1 split and
 * 27 s after it healed). Every QUORUM_CHECK_MS the connection asks JetStream for the stream names
 * (only the meta leader answers them) and for two streams' info (their leader must have heard from a
 * majority of its replicas: a cut-off meta leader answers stream names for as long as the partition
 * lasts); after QUORUM_MISSES misses in a row it asks `leave`, which probes the other servers and
 * moves to one that has a quorum now, or stays when none has (the whole cluster electing its meta
 * leader). Issue 45: checked every 5 s on stream names only, and nats.js
 * redialling the server being left on a process's first forced reconnect, a client stayed ~20 s
 * (or the whole fault) on a cut-off node.
 */
function leaveServerWithoutQuorum(nc: NatsConnection, leave: (server: string) => Promise<boolean>) {
  let misses = 0;
  let asking = false;
  const timer = setInterval(() => {
    if (asking || nc.isClosed() || nc.isDraining()) return;
    asking = true;
    hasQuorum(nc, false)
      .then(async (answered) => {
        if (answered === null) return clearInterval(timer); // JetStream not enabled for this account: nothing to watch
        misses = answered ? 0 : misses + 1;
        if (misses >= QUORUM_MISSES && !nc.isClosed() && !nc.isDraining()) {
          misses = 0;
          if (!(await leave(nc.getServer())) || nc.isClosed() || nc.isDraining()) return;
          nc.reconnect().catch(() => {
            /* closed meanwhile */
          });
        }
      })
      .catch(() => {})
      .finally(() => {
        asking = false;
      });
  }, QUORUM_CHECK_MS);
  timer.unref();
  void nc.closed().then(() => clearInterval(timer));
}

/**
 * Whether JetStream answers through `nc`'s server with a quorum (null: JetStream is not enabled for
 * the account). Stream names: answered by the meta leader only (account info is answered by any
 * server, a cut-off one included). A cut-off meta leader answers them too, from its own state, for
 * as long as the partition lasts (issue 45, run 3: 20 s): the replicas of a stream must also have
 * been heard from (streamHeard). `strict` (a probe before a move): both of two streams, heard
 * within PROBE_HEARD_NS; otherwise either (one stream electing its leader does not move every
 * connection).
 */
async function hasQuorum(nc: NatsConnection, strict: boolean): Promise<boolean | null> {
  try {
    const m = await nc.request('$JS.API.STREAM.NAMES', '{"offset":0}', { timeout: QUORUM_TIMEOUT_MS });
    const body = m.json<{ error?: { code: number; err_code?: number }; streams?: string[] | null }>();
    if (body.error?.err_code === 10039) return null;
    if (body.error) return false;
    const names = [...(body.streams ?? [])].sort().slice(0, 2);
    if (!names.length) return true;
    const heard = await Promise.all(names.map((n) => streamHeard(nc, n, strict ? PROBE_HEARD_NS : REPLICA_SILENT_NS)));
    return strict ? heard.every(Boolean) : heard.some(Boolean);
  } catch {
    return false;
  }
}

/** A replica not heard from by its stream's leader for this long counts as gone. */
export const REPLICA_SILENT_NS = 4e9;
/** The same for a probe before a move: a leader cut off 2 s ago must not pass (raft heartbeats come every second). */
const PROBE_HEARD_NS = 2e9;

/**
 * Whether `stream`'s leader answers through this connection's server and has heard from a majority
 * of its replicas lately. From a server cut off from the majority: no answer (the leader is on the
 * other side), or a leader that is cut off itself and has not heard from its followers.
 */
async function streamHeard(nc: NatsConnection, stream: string, silentNs: number): Promise<boolean> {
  try {
    const m = await nc.request(`$JS.API.STREAM.INFO.${stream}`, '', { timeout: QUORUM_TIMEOUT_MS });
    const info = m.json<{ error?: unknown; cluster?: { replicas?: { active?: number; offline?: boolean }[] } }>();
    if (info.error) return false;
    return leaderHeardMajority(info.cluster?.replicas ?? [], silentNs);
  } catch {
    return false;
  }
}

/**
 * Whether a stream's leader (its stream info's replicas: the followers) has heard from a majority
 * of the stream's peers, itself included, within `silentNs`. A leader cut off from the others still
 * answers as the leader for a while, with followers it has not heard from.
 */
export function leaderHeardMajority(replicas: readonly { active?: number; offline?: boolean }[], silentNs = REPLICA_SILENT_NS): boolean {
  const heard = replicas.filter((r) => !r.offline && (r.active ?? Infinity) < silentNs).length;
  return heard + 1 >= Math.floor((replicas.length + 1) / 2) + 1;
}

/**
 * `expires` of a long-running `consume()`: its pull requests last this long and the server sends
 * an idle heartbeat every half of it. The client notices a pull lost with a consumer leader that
 * died (a NATS node killed) only after two missed heartbeats, and pulls again; with the default
 * 30 s that took 30 s per consumer, so a job crossing two consumers could wait a minute after a
 * node loss. 5 s bounds it to about 5 s, for one small pull request per consumer every 5 s.
 */
export const CONSUME_EXPIRES_MS = 5000;
