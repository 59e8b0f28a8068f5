// Counts NATS traffic while something runs, to say how many writes and round trips a job costs:
// - JetStream writes: the sum over every stream (KV buckets and object stores included) of how far
//   its last sequence moved (a put, a delete marker and a stream publish each take one);
// - core requests: messages carrying a reply subject on a subject no stream stores and outside the
//   JetStream API (`$JS.`) and reply inboxes (`_INBOX.`): the request/reply calls between actors;
// - core publishes: the same without a reply subject (events, progress);
// - JetStream API calls and acks (`$JS.API.`, `$JS.ACK.`), counted apart.
// A wildcard subscription on its own connection sees every message of the account; it publishes
// nothing while counting, so it counts only the system's traffic.
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connectNats } from '../../shared/nats/connect.ts';

export interface Traffic {
  jetstreamWrites: number;
  /** The writes by stream (`KV_jobs`, `JOBS`...). */
  writesByStream: Record<string, number>;
  coreRequests: number;
  corePublishes: number;
  jsApi: number;
  jsAcks: number;
  /** Core requests and publishes by subject (ids folded to `*`), for the note. */
  bySubject: Record<string, number>;
  /** JetStream API calls by kind (`CONSUMER.MSG.NEXT`, `DIRECT.GET`...: the stream and consumer names left out). */
  jsApiByKind: Record<string, number>;
}

/** `$JS.API.CONSUMER.MSG.NEXT.TASKS.converter` → `CONSUMER.MSG.NEXT`: the call without the names it applies to. */
export function jsApiKind(subject: string): string {
  const t = subject.split('.').slice(2);
  const verbs = ['INFO', 'CREATE', 'DELETE', 'NEXT', 'GET', 'UPDATE', 'NAMES', 'LIST', 'PURGE'];
  const end = t.findIndex((x) => verbs.includes(x));
  return (end >= 0 ? t.slice(0, end + 1) : t.slice(0, 2)).join('.');
}

/** Does NATS subject `s` match `pattern` (with `*` and `>`)? */
export function subjectMatches(pattern: string, s: string): boolean {
  const p = pattern.split('.');
  const t = s.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return t.length > i;
    if (i >= t.length) return false;
    if (p[i] !== '*' && p[i] !== t[i]) return false;
  }
  return p.length === t.length;
}

async function streamState(jsm: JetStreamManager) {
  const seqs = new Map<string, number>();
  const subjects: string[] = [];
  for await (const si of jsm.streams.list()) {
    seqs.set(si.config.name, si.state.last_seq);
    subjects.push(...(si.config.subjects ?? []));
  }
  return { seqs, subjects };
}

/** A subject with its variable tokens (ids, hashes) folded, so a row's note stays short. */
const fold = (s: string) =>
  s
    .split('.')
    .map((t) => (/\d/.test(t) && t.length > 8 ? '*' : t))
    .join('.');

export async function countTraffic(url: string, run: () => Promise<void>, settleMs = 300): Promise<Traffic> {
  const nc = await connectNats(url, 'bench-traffic');
  try {
    const jsm = await jetstreamManager(nc);
    const before = await streamState(jsm);
    const t: Traffic = {
      jetstreamWrites: 0,
      writesByStream: {},
      coreRequests: 0,
      corePublishes: 0,
      jsApi: 0,
      jsAcks: 0,
      bySubject: {},
      jsApiByKind: {},
    };
    const sub = nc.subscribe('>', {
      callback: (_err, m) => {
        const s = m.subject;
        // replies, and the server's own advisories, are no one's request
        if (s.startsWith('_INBOX.') || s.startsWith('$JS.EVENT.')) return;
        if (s.startsWith('$JS.API.')) {
          t.jsApi++;
          const k = jsApiKind(s);
          t.jsApiByKind[k] = (t.jsApiByKind[k] ?? 0) + 1;
          return;
        }
        if (s.startsWith('$JS.ACK.')) {
          t.jsAcks++;
          return;
        }
        if (before.subjects.some((p) => subjectMatches(p, s))) return; // a stream write, counted by sequence
        if (m.reply) t.coreRequests++;
        else t.corePublishes++;
        const k = `${m.reply ? 'req' : 'pub'} ${fold(s)}`;
        t.bySubject[k] = (t.bySubject[k] ?? 0) + 1;
      },
    });
    await nc.flush();
    await run();
    // what a job does after its answer (the supervisor's last writes) still belongs to it
    await new Promise((r) => setTimeout(r, settleMs));
    await nc.flush();
    sub.unsubscribe();
    const after = await streamState(jsm);
    for (const [name, seq] of after.seqs) {
      const n = seq - (before.seqs.get(name) ?? 0);
      t.jetstreamWrites += n;
      if (n) t.writesByStream[name] = n;
    }
    return t;
  } finally {
    await nc.close();
  }
}
