// Fair shares (issue 44 item 1): with one wallet holding 1,000 stalling tasks, another wallet's
// metadata job completes within 1.5x its idle p50. One cluster (gateway, wallet, job-supervisor,
// converter, each its own process): wallet B's metadata jobs one after another on an idle system
// (the baseline), then wallet A creates jobs worth 1,000 tasks against a host that accepts TCP and
// never answers, and B's jobs run again. The figure is B's p50 under A's backlog over its idle p50.
//   node --import tsx bench/run.ts fairness          (BENCH_QUICK=1: fewer samples)
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { jetstreamManager } from '@nats-io/jetstream';
import { createKey } from '../shared/keys.ts';
import { wallet } from '../shared/protocol/wallet.ts';
import { walletTasks } from '../shared/jobs/share.ts';
import { median, quick, type BenchRow } from './figure.ts';
import type { Cluster } from './lib/cluster.ts';
import { startPageServer } from './lib/page.ts';

/** Settings of the cluster this benchmark starts (merged over BENCH_OVERRIDES). */
export const FAIRNESS_CONFIG = {
  // the defaults of the share; A's stalls outlast the run (fetch and task bounds far away)
  limits: { walletTasks: 2, queueMax: 2000 },
  websitepro: { concurrency: 4, fetchTimeoutMs: 600_000 },
  jobs: { taskTimeoutSeconds: 900 },
};

const STALLING_TASKS = 1000;
const OUTPUTS = ['metadata', 'markdown', 'text', 'html'];

export async function runFairnessBench(cluster: Cluster): Promise<{ rows: BenchRow[]; raw: unknown }> {
  const needed = ['wallet', 'job-supervisor', 'converter'].filter((a) => !cluster.units.has(a));
  if (needed.length) return { rows: [{ name: 'fairness', skipped: `actors not running: ${needed.join(', ')}` }], raw: null };
  const samples = quick() ? 15 : 40;
  const page = await startPageServer();
  const sockets = new Set<Socket>();
  const stall = createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
  });
  await new Promise<void>((r) => stall.listen(0, '127.0.0.1', r));
  const stallUrl = `http://127.0.0.1:${(stall.address() as AddressInfo).port}/`;
  try {
    const a = await createKey(cluster.nc, 'admin');
    const b = await createKey(cluster.nc, 'admin');
    await wallet.grant(cluster.nc, a.walletId, 100_000_000, 'bench');
    await wallet.grant(cluster.nc, b.walletId, 100_000_000, 'bench');
    const post = async (key: string, body: unknown, wait = 25) => {
      const res = await fetch(`${cluster.gatewayUrl}/v1/websitepro/jobs?wait=${wait}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as { job?: { status: string }; error?: { code: string } } };
    };
    let n = 0;
    const failures: string[] = [];
    /** B's metadata jobs one after another: ms from the request to the completed answer. */
    const measure = async () => {
      const out: number[] = [];
      for (let i = 0; i < samples; i++) {
        const t0 = performance.now();
        const r = await post(b.key, { url: `${page.url}?n=${n++}`, outputs: ['metadata'] });
        const ms = performance.now() - t0;
        if (r.status !== 201 || r.json.job?.status !== 'completed')
          failures.push(`${r.status} ${r.json.job?.status ?? r.json.error?.code}`);
        else out.push(ms);
      }
      return out;
    };
    await measure(); // warm-up: the converter's threads, the gateway's caches
    const idle = await measure();

    // wallet A: jobs worth STALLING_TASKS tasks against the host that never answers
    let refused = 0;
    for (let i = 0; i < STALLING_TASKS / OUTPUTS.length; i++) {
      const r = await post(a.key, { url: `${stallUrl}?n=${i}`, outputs: OUTPUTS }, 0);
      if (r.status !== 201) refused++;
    }
    const jsm = await jetstreamManager(cluster.nc);
    const backlog = await walletTasks(jsm, a.walletId);
    const loaded = await measure();
    const after = await walletTasks(jsm, a.walletId);
    const idleP50 = median(idle);
    const loadedP50 = median(loaded);
    const note = `wallet B's metadata job (?wait=25) one after another, ${samples} samples each; baseline: idle, value: while wallet A holds ${backlog.taken + backlog.held} stalling tasks (${backlog.taken} taken by workers, ${backlog.held} held; ${after.taken + after.held} still unfinished after); A's creations refused: ${refused}; B's jobs not completed: ${failures.length}; limits.walletTasks ${FAIRNESS_CONFIG.limits.walletTasks}, converter concurrency ${FAIRNESS_CONFIG.websitepro.concurrency}`;
    return {
      rows: [
        {
          name: 'fairness: metadata job p50 under another wallet’s 1,000 stalling tasks',
          unit: 'ms',
          value: loadedP50,
          baseline: idleP50,
          ratio: loadedP50 / idleP50,
          samples: loaded,
          baselineSamples: idle,
          note,
        },
      ],
      raw: { idle, loaded, backlog, after, refused, failures },
    };
  } finally {
    for (const s of sockets) s.destroy();
    stall.close();
    await page.close();
  }
}
