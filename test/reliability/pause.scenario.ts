// A paused process, not a dead one: the wallet SIGSTOPped for 20 s while charges arrive, then
// SIGCONT. Its NATS connection stays open, so requests queue up at it and are all handled at once
// on resume, long after the gateway gave up on them. Nothing may be charged twice, and no charge
// may stay applied for a creation the gateway answered as failed: such a charge (handled after
// its answer was given up on) must be refunded by the orphan sweep. Figures: docs/reliability.md.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { until, retry } from '../helpers/cluster.ts';
import { startFaultBench, FAULT_GRANT } from '../helpers/faults.ts';
import { audit, readLedger } from '../../shared/audit.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { startPages } from './fixtures/pages.ts';

t.setTimeout(480_000);
const PAUSE_MS = 20_000;
const ORPHAN_GRACE_SECONDS = 10;

const pages = await startPages();
t.teardown(() => pages.close());

t.test('the wallet paused for 20 s while charges arrive, then resumed', async (t) => {
  const b = await startFaultBench(t, {
    pagesPort: pages.port,
    name: 'pause',
    config: { wallet: { orphanChargeGraceSeconds: ORPHAN_GRACE_SECONDS } },
  });
  const w = b.sys.procs.find((p) => p.name === 'wallet')!;
  t.teardown(() => {
    try {
      process.kill(w.pid, 'SIGCONT');
    } catch {
      /* gone */
    }
  });

  const created: string[] = [];
  const codes: Record<string, number> = {};
  let stop = false;
  // four clients creating jobs without pause, as a busy API would see
  const clients = Array.from({ length: 4 }, (_, c) =>
    (async () => {
      for (let i = 0; !stop; i++) {
        const r = await b.create(`${pages.url}pause-${c}-${i}`).catch(() => ({ status: 0, json: { error: { code: 'client_error' } } }));
        if (r.status === 201) created.push(r.json.job.id);
        else codes[`${r.status} ${r.json?.error?.code ?? ''}`] = (codes[`${r.status} ${r.json?.error?.code ?? ''}`] ?? 0) + 1;
        await sleep(200);
      }
    })(),
  );
  await sleep(2000);
  const before = created.length;
  process.kill(w.pid, 'SIGSTOP');
  const pausedAt = Date.now();
  await sleep(PAUSE_MS);
  const duringPause = created.length - before;
  process.kill(w.pid, 'SIGCONT');
  const resumedAt = Date.now();
  const n0 = created.length;
  await until('a job created after the wallet resumed', async () => created.length > n0, 60_000, 100);
  const recoverMs = Date.now() - resumedAt;
  stop = true;
  await Promise.all(clients);
  t.comment(
    JSON.stringify({
      pausedSeconds: Math.round((resumedAt - pausedAt) / 1000),
      createdBeforeAndAfter: created.length - duringPause,
      createdDuringPause: duringPause,
      failedCreations: codes,
      recoverSeconds: +(recoverMs / 1000).toFixed(1),
    }),
  );
  t.ok(
    Object.keys(codes).every((c) => c.startsWith('503 service_unavailable')),
    `every failed creation is a 503 service_unavailable (${JSON.stringify(codes)})`,
  );

  for (const id of created) await b.finished(id, 180_000);

  // charges the resumed wallet applied for creations already answered 503: refunded by the sweep
  const createdSet = new Set(created);
  const orphans = async () => {
    const ledger = await retry(() => readLedger(b.nc));
    const mine = ledger.filter((e) => e.walletId === b.walletId);
    const charged = mine.filter((e) => e.type === 'charge' && e.jobId && !createdSet.has(e.jobId));
    return charged.map((c) => ({
      jobId: c.jobId!,
      net: c.amount + mine.filter((e) => e.type === 'refund' && e.jobId === c.jobId).reduce((s, e) => s + e.amount, 0),
    }));
  };
  // The gateway's charge request says until when it waits (answerBy): the resumed wallet refuses
  // the stale ones. Before that, every creation answered 503 during the pause was charged on
  // resume and refunded only by the orphan sweep (8 of 8 in the first run). A charge whose write
  // began just before its answerBy can still land after the gateway gave up (the resumed wallet
  // works through its backlog for one wallet one write at a time, and a write under load can take
  // longer than the 1 s margin): seen once in 8 under load 12. That one is not the caller's loss:
  // the orphan sweep gives it back whole, which is what the gateway's 503 promises.
  const failed = Object.values(codes).reduce((s, n) => s + n, 0);
  let late = await orphans();
  t.comment(`charges applied after their creation was answered 503: ${late.length} of ${failed}`);
  if (failed > 0) t.ok(late.length < failed, `the resumed wallet refused stale charges (${late.length} of ${failed} applied)`);
  await until(
    'every late charge refunded whole by the orphan sweep',
    async () => (late = await orphans()).every((c) => c.net === 0),
    (ORPHAN_GRACE_SECONDS + 60) * 1000,
    1000,
  );
  t.same(
    late.filter((c) => c.net !== 0),
    [],
    'no charge kept for a creation answered as failed',
  );

  const ledger = await readLedger(b.nc);
  const mine = ledger.filter((e) => e.walletId === b.walletId);
  for (const id of created) {
    const n = mine.filter((e) => e.type === 'charge' && e.jobId === id).length;
    if (n !== 1) t.fail(`job ${id} charged ${n} times`);
  }
  t.pass(`every created job (${created.length}) charged exactly once`);
  const report = await retry(() => audit(b.nc));
  t.same(report.violations, [], 'money audit clean: no double charge, no lost refund');
  const balance = (await retry(() => wallet.balance(b.nc, b.walletId))).balance;
  t.equal(
    balance,
    FAULT_GRANT + mine.filter((e) => e.type !== 'grant').reduce((s, e) => s + e.amount, 0),
    'the balance is the grant plus every entry',
  );
  await b.clean('after the pause');
});
