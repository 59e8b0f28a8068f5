// Throughput of the job pipeline at the NATS level (wallet + supervisors + test workers), no HTTP.
//   node --import tsx test/jobs/measure.ts [jobs=300] [resultsPerJob=3] [supervisors=1]
// Prints jobs/s and the spread of creation→finished latency; checks the money audit at the end.
import { startJobsSystem } from './lib.ts';

const [jobs = 300, per = 3, sups = 1] = process.argv.slice(2).map(Number);
const teardowns: (() => unknown)[] = [];
const t = { teardown: (fn: () => unknown) => teardowns.push(fn) };
const s = await startJobsSystem(t);
for (let i = 1; i < sups; i++) await s.startSupervisor();
await s.startWorker({ concurrency: 16 });
const { walletId } = await s.newWallet(jobs * per * 10);
const t0 = performance.now();
const lat: number[] = [];
let next = 0;
async function lane() {
  while (next < jobs) {
    const i = next++;
    const a = performance.now();
    const items = Array.from({ length: per }, (_, k) => ({ key: `r${k}`, price: 10, behave: k === 0 && i % 5 === 0 ? 'fail' : 'succeed' }));
    const { job } = await s.submit(walletId, items);
    const done = await s.finished(job.id, 60_000);
    if (done.status !== 'completed') throw new Error(`job ${job.id} ${done.status}`);
    lat.push(performance.now() - a);
  }
}
await Promise.all(Array.from({ length: 32 }, lane));
const secs = (performance.now() - t0) / 1000;
lat.sort((a, b) => a - b);
const p = (q: number) => Math.round(lat[Math.min(lat.length - 1, Math.floor(q * lat.length))]!);
const v = await s.violations();
console.log(
  JSON.stringify({
    jobs,
    resultsPerJob: per,
    supervisors: sups,
    seconds: Math.round(secs * 10) / 10,
    jobsPerSecond: Math.round((jobs / secs) * 10) / 10,
    latencyMs: { p50: p(0.5), p90: p(0.9), p99: p(0.99) },
    auditViolations: v.length,
  }),
);
for (const fn of teardowns.reverse()) await fn();
process.exit(0);
