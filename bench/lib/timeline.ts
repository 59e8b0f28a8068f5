// Where a job's time goes, read off the wire: a wildcard subscription on its own connection sees
// every message of the account (requests, replies, stream publishes and their acks, deliveries to
// consumers, KV watch pushes), each stamped when it reaches this process. Jobs run one after
// another, so everything between a job's request and its answer belongs to it (a sweep that falls
// in the window shows as an unnamed event). Nothing is added to the system's own code: the cost is
// one more subscriber for nats-server while tracing.
import { performance } from 'node:perf_hooks';
import { connectNats } from '../../shared/nats/connect.ts';

export interface WireEvent {
  /** ms since the job's request was sent */
  t: number;
  subject: string;
  reply?: string;
}

export interface JobTrace {
  events: WireEvent[];
  /** ms since the request: the page server saw the fetch */
  fetchedAt?: number;
  /** ms since the request: the answer reached the client */
  answeredAt: number;
}

/** A subject with ids and hashes folded to `*`, so traces of different jobs line up. */
export const foldSubject = (s: string) =>
  s
    .split('.')
    .map((t) => (/\d/.test(t) && t.length > 8 ? '*' : t))
    .join('.');

export class WireTrace {
  private events: WireEvent[] | null = null;
  private t0 = 0;
  private readonly nc: Awaited<ReturnType<typeof connectNats>>;
  private constructor(nc: Awaited<ReturnType<typeof connectNats>>) {
    this.nc = nc;
  }

  static async start(url: string): Promise<WireTrace> {
    const nc = await connectNats(url, 'bench-timeline');
    const tr = new WireTrace(nc);
    nc.subscribe('>', {
      callback: (_err, m) => {
        if (!tr.events) return;
        if (m.subject.startsWith('$JS.EVENT.')) return; // the server's advisories are no step of the job
        tr.events.push({ t: performance.now() - tr.t0, subject: m.subject, ...(m.reply ? { reply: m.reply } : {}) });
      },
    });
    await nc.flush();
    return tr;
  }

  /** Run one job; `run` reports when the page was fetched (performance.now()) if it knows. */
  async job(run: () => Promise<number | undefined>): Promise<JobTrace> {
    this.events = [];
    this.t0 = performance.now();
    const fetched = await run();
    const answeredAt = performance.now() - this.t0;
    // what reaches the subscriber just after the answer (the supervisor's last acks) is not waited for
    await this.nc.flush();
    const events = this.events;
    this.events = null;
    return { events, answeredAt, ...(fetched !== undefined ? { fetchedAt: fetched - this.t0 } : {}) };
  }

  async close() {
    await this.nc.close();
  }
}

/**
 * The stages of a websitepro metadata job as the wire shows them, each the first event that marks
 * it. A reply is matched to its request by the reply subject. The names are the steps of
 * docs/worker-protocol.md; a stage the trace lacks is left out of that job.
 */
export function stagesOf(tr: JobTrace): Record<string, number> {
  const out: Record<string, number> = {};
  const ev = tr.events;
  const first = (pred: (e: WireEvent) => boolean, from = 0) => ev.find((e) => e.t >= from && pred(e));
  const replyTo = (req: WireEvent | undefined) => (req?.reply ? ev.find((e) => e.subject === req.reply && e.t >= req.t) : undefined);
  const mark = (name: string, e: WireEvent | undefined) => {
    if (e && out[name] === undefined) out[name] = e.t;
  };

  const queueInfo = first((e) => e.subject.startsWith('$JS.API.STREAM.INFO.TASKS'));
  mark('gateway asks TASKS depth', queueInfo);
  const charge = first((e) => e.subject.includes('wallet') && e.subject.includes('charge'));
  mark('charge sent', charge);
  mark('charge answered', replyTo(charge));
  const taskPub = first((e) => e.subject.startsWith('task.') && !e.reply?.startsWith('$JS.ACK.'));
  mark('task published', taskPub);
  mark('task acked', replyTo(taskPub));
  const create = first((e) => e.subject.startsWith('$KV.jobs.') && !e.reply?.startsWith('$JS.ACK.'));
  mark('job doc written', create);
  mark('job doc acked', replyTo(create));
  const delivered = first((e) => e.subject.startsWith('task.') && !!e.reply?.startsWith('$JS.ACK.TASKS'));
  mark('worker got task', delivered);
  if (tr.fetchedAt !== undefined) out['page fetched'] = tr.fetchedAt;
  // the object store's put starts with a read of the object's meta (to replace an older one)
  const objPut = first(
    (e) => (e.subject.startsWith('$O.') && !e.reply?.startsWith('$JS.ACK.')) || e.subject.startsWith('$JS.API.STREAM.MSG.GET.OBJ_'),
    delivered?.t ?? 0,
  );
  mark('file put started (conversion done)', objPut);
  const outcome = first((e) => e.subject.startsWith('result.') && !e.reply?.startsWith('$JS.ACK.'));
  const objPuts = ev.filter((e) => e.subject.startsWith('$O.') && !e.reply?.startsWith('$JS.ACK.') && (!outcome || e.t <= outcome.t));
  mark('file put acked', replyTo(objPuts[objPuts.length - 1]));
  mark('outcome published', outcome);
  mark('outcome acked', replyTo(outcome));
  const supGot = first((e) => e.subject.startsWith('result.') && !!e.reply?.startsWith('$JS.ACK.RESULTS'));
  mark('supervisor got outcome', supGot);
  const read = first(
    (e) => e.subject.includes('.KV_jobs') && (e.subject.includes('DIRECT.GET') || e.subject.includes('MSG.GET')),
    supGot?.t ?? Infinity,
  );
  mark('supervisor read doc', read);
  mark('supervisor read answered', replyTo(read));
  const update = first((e) => e.subject.startsWith('$KV.jobs.') && !e.reply?.startsWith('$JS.ACK.'), supGot?.t ?? Infinity);
  mark('doc updated', update);
  mark('doc update acked', replyTo(update));
  const pushed = first((e) => e.subject.startsWith('$KV.jobs.') && !!e.reply?.startsWith('$JS.ACK.KV_jobs'), update?.t ?? Infinity);
  mark('gateway watch got doc', pushed);
  out['long poll answered'] = tr.answeredAt;
  return out;
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2) : NaN;
};

/**
 * Per stage over the jobs: median time since the request and median time since the stage before it
 * (per job, then the median: a missing stage in one job does not shift the others).
 */
export function summarise(traces: JobTrace[]): { stage: string; at: number; step: number; min: number; jobs: number }[] {
  const per = traces.map(stagesOf);
  const order: string[] = [];
  for (const p of per) for (const k of Object.keys(p).sort((a, b) => p[a]! - p[b]!)) if (!order.includes(k)) order.push(k);
  // the order of the median job, so a rare reordering does not scramble the table
  order.sort(
    (a, b) =>
      median(per.map((p) => p[a]).filter((x): x is number => x !== undefined)) -
      median(per.map((p) => p[b]).filter((x): x is number => x !== undefined)),
  );
  return order.map((stage, i) => {
    const ats = per.map((p) => p[stage]).filter((x): x is number => x !== undefined);
    const steps = per.flatMap((p) => {
      if (p[stage] === undefined) return [];
      const prev = order
        .slice(0, i)
        .reverse()
        .find((s) => p[s] !== undefined);
      return [p[stage]! - (prev ? p[prev]! : 0)];
    });
    return { stage, at: median(ats), step: median(steps), min: Math.min(...steps), jobs: ats.length };
  });
}

/** The job's time in three parts: before the worker fetched the page, the work (fetch + conversion), after it. */
export function segmentsOf(tr: JobTrace): { before: number; work: number; after: number } | null {
  const st = stagesOf(tr);
  const fetched = st['page fetched'];
  const converted = st['file put started (conversion done)'];
  if (fetched === undefined || converted === undefined) return null;
  return { before: fetched, work: converted - fetched, after: tr.answeredAt - converted };
}
