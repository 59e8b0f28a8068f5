// Runs one module (or a custom selection) against a relay and builds the labs.report/1 document.
import type { SecureContextOptions } from 'node:tls';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import type { Config } from '../../shared/config/index.ts';
import { LabsReport, LABS_REPORT_SCHEMA_ID, type ReportCheck } from '../../shared/schemas/labs-report.ts';
import { BudgetExceeded, Probe, ProbeFatal, TEST_MARKER, type ProbeTimings } from './probe.ts';
import {
  CHECKS,
  cleanup,
  cleanupAfterStop,
  moduleChecks,
  percentiles,
  type CheckDef,
  type CleanupResult,
  type Outcome,
} from './checks/index.ts';
import type { CheckStatus } from '../../shared/schemas/labs-report.ts';

export type RunModule = 'quick' | 'conformance' | 'custom';

export interface RunOptions {
  url: string;
  module: RunModule;
  /** For `custom`: check ids (unknown ones ignored). */
  checks?: string[];
  config: Config;
  ca?: SecureContextOptions['ca'];
  timings?: Partial<ProbeTimings>;
  progress?: (text: string) => void;
  signal?: AbortSignal;
  log?: { warn(o: object, m: string): void };
  /** Where the throwaway keys are kept until the clean-up is done (actors/relay-prober/cleanups.ts). */
  cleanups?: CleanupKeeper;
}

/** Keeps a run's throwaway keys in NATS while its test events may be on the relay. */
export interface CleanupKeeper {
  /** Before the first event the relay may store. */
  record(p: Probe): Promise<void>;
  /** The deletion was sent: the keys are no longer needed. */
  done(p: Probe): Promise<void>;
  /** A clean-up running after a stop, which a stopping prober waits for (within its bound). */
  track(running: Promise<unknown>): void;
}

/** A clean-up that reached the relay (or had nothing to delete): its keys can go. */
const cleanupDone = (r: CleanupResult | null) => !!r && (r.requests > 0 || (r.stored === 0 && r.remaining.length === 0));

const ajv = new Ajv({ allErrors: true, strict: false });
(addFormats as unknown as (a: Ajv) => void)(ajv);
export const validateReport = ajv.compile(LabsReport);

export function selectChecks(module: RunModule, ids: string[] = []): CheckDef[] {
  if (module !== 'custom') return moduleChecks(module);
  const want = new Set(ids);
  return CHECKS.filter((c) => c.selectable && want.has(c.id));
}

/** Least round trips the selected checks need (the bench's baseline). */
export const minRoundTrips = (checks: CheckDef[], timings: ProbeTimings) =>
  3 /* first connection, its REQ, NIP-11 */ +
  checks.reduce((s, c) => s + (typeof c.minRoundTrips === 'function' ? c.minRoundTrips(timings) : c.minRoundTrips), 0);

const strict = (level: string) => level === 'required' || level === 'essential';

/**
 * The severity model (docs/labs.md): the rule a finding was judged by caps its status. MUST can
 * fail; SHOULD and conventions warn at most; MAY and measurements are info. A check of an optional
 * NIP the relay does not list in `supported_nips` warns at most ("offered but broken"); one the
 * relay does list and fails is a fail and goes into the advertised-versus-observed table.
 */
export function judge(
  c: CheckDef,
  out: Outcome,
  p: Probe,
): { status: CheckStatus; message: string; basis: CheckDef['basis']; advertised?: boolean | null } {
  const basis = out.rule ?? c.basis;
  const advertised = basis.nipOptional ? p.advertisesNip(Number(basis.nip)) : undefined;
  let status = out.status;
  let message = out.message;
  if (basis.level === 'measurement' && status !== 'skip') status = 'info';
  else if (basis.level === 'optional' && (status === 'fail' || status === 'warn')) status = 'info';
  else if (status === 'fail' && !strict(basis.level)) status = 'warn';
  else if (status === 'fail' && basis.nipOptional && advertised !== true) {
    status = 'warn';
    message = `offered but broken (NIP-${basis.nip} is not in supported_nips): ${message}`;
  } else if (status === 'fail' && basis.nipOptional) {
    p.observe(`supported_nips: ${Number(basis.nip)}`, true, `${c.id} failed`, false, c.id);
  }
  return { status, message, basis, ...(basis.nipOptional ? { advertised: advertised ?? null } : {}) };
}

export async function runModule(o: RunOptions): Promise<{ report: LabsReport; probe: Probe }> {
  const keeper = o.cleanups;
  const p = new Probe(o.url, o.config, {
    ca: o.ca,
    timings: o.timings,
    progress: o.progress,
    ...(keeper ? { beforeFirstEvent: (x: Probe) => keeper.record(x) } : {}),
  });
  const selected = selectChecks(o.module, o.checks);
  const started = new Date();
  const checks: ReportCheck[] = [];
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ProbeFatal('timeout', `the module did not finish within ${o.config.labs.moduleTimeoutMs} ms`)),
      o.config.labs.moduleTimeoutMs,
    );
  });
  const abort = new Promise<never>((_, reject) => o.signal?.addEventListener('abort', () => reject(new Error('stopping')), { once: true }));
  const work = async () => {
    p.progress('connecting');
    await p.reachable();
    await p.fetchNip11();
    for (const [i, c] of selected.entries()) {
      if (o.signal?.aborted) throw new Error('stopping');
      if (p.stopped) throw new Error('stopped');
      p.progress(`check ${i + 1}/${selected.length}: ${c.id}`);
      const t0 = performance.now();
      let out;
      try {
        out = await c.run(p);
      } catch (e) {
        if (e instanceof ProbeFatal) throw e;
        if (e instanceof BudgetExceeded) out = { status: 'skip' as const, message: e.message, details: {} };
        else {
          o.log?.warn({ err: e, check: c.id }, 'check crashed');
          out = { status: 'skip' as const, message: `could not run: ${(e as Error).message}`, details: {} };
        }
      }
      const v = judge(c, out, p);
      p.results.set(c.id, { status: v.status, details: out.details ?? {} });
      checks.push({
        id: c.id,
        title: c.title,
        status: v.status,
        message: v.message,
        details: out.details ?? {},
        basis: v.basis,
        ...(v.advertised !== undefined ? { advertised: v.advertised } : {}),
        durationMs: Math.round(performance.now() - t0),
      });
    }
    const cl = await cleanup(p);
    if (cl.stored) {
      const adv = p.advertisesNip(9);
      p.observe('supported_nips: 9', adv, cl.honoured, adv === null || cl.honoured === null ? null : adv === cl.honoured);
    }
    // every other claim of the document, beside "not observed" (the checks that would see it did not run)
    const seen = new Set(p.observed.map((r) => r.claim));
    const nips = p.info?.supported_nips;
    if (Array.isArray(nips))
      for (const n of nips) if (!seen.has(`supported_nips: ${n}`)) p.observe(`supported_nips: ${n}`, true, null, null);
    for (const [k, v] of Object.entries(p.limitation)) if (!seen.has(`limitation.${k}`)) p.observe(`limitation.${k}`, v, null, null);
    return cl;
  };
  let cl: Awaited<ReturnType<typeof work>>;
  try {
    cl = await Promise.race([work(), timeout, abort]);
    if (cleanupDone(cl)) await keeper?.done(p).catch(() => {});
  } catch (e) {
    // a run that stopped early (timeout, fatal error, actor stopping) still removes what it published
    p.stop();
    const running = cleanupAfterStop(p, Math.min(20_000, 2 * o.config.labs.replyTimeoutMs + p.timings.connectTimeoutMs));
    keeper?.track(running);
    const done = await running;
    if (done)
      o.log?.warn(
        { relay: p.url.href, deleted: p.deleted.size, remaining: done.remaining.length },
        'test events deleted after the module stopped early',
      );
    // not done (the bound ran out, no connection): the keys stay for the next prober's sweep
    if (cleanupDone(done)) await keeper?.done(p).catch(() => {});
    throw e;
  } finally {
    clearTimeout(timer);
    p.stop();
  }
  const finished = new Date();
  const count = (s: string) => checks.filter((c) => c.status === s).length;
  const summary = {
    total: checks.length,
    pass: count('pass'),
    fail: count('fail'),
    warn: count('warn'),
    skip: count('skip'),
    info: count('info'),
  };
  const judged = summary.pass + summary.warn + summary.fail;
  const info = p.info;
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  const report: LabsReport = {
    schema: LABS_REPORT_SCHEMA_ID,
    module: o.module,
    relay: {
      url: p.url.href,
      name: str(info?.name),
      software: str(info?.software),
      version: str(info?.version),
      supportedNips:
        Array.isArray(info?.supported_nips) && info.supported_nips.every((n) => Number.isInteger(n))
          ? (info.supported_nips as number[])
          : null,
    },
    startedAt: started.toISOString(),
    finishedAt: finished.toISOString(),
    durationMs: finished.getTime() - started.getTime(),
    summary,
    score: judged ? Math.round((100 * (summary.pass + 0.5 * summary.warn)) / judged) : 0,
    checks,
    latency: { connect: percentiles(p.latency.connect), eose: percentiles(p.latency.eose), ok: percentiles(p.latency.ok) },
    advertisedVsObserved: p.observed,
    testData: {
      pubkeys: p.keys.map((k) => k.pk),
      marker: [...TEST_MARKER],
      eventsSent: p.usage.events,
      eventsDeleted: p.deleted.size,
      deletionHonoured: cl.honoured,
    },
    usage: { connections: p.usage.connections, subscriptions: p.usage.subscriptions, roundTrips: p.usage.roundTrips },
  };
  if (!validateReport(report)) throw new Error(`report does not match ${LABS_REPORT_SCHEMA_ID}: ${ajv.errorsText(validateReport.errors)}`);
  return { report, probe: p };
}
