// Baseline child of bench/converter.ts: the libraries websitepro is built on, called directly the
// way their READMEs show, doing the same work (metadata + markdown) on the same pages, with as many
// worker threads as the converter's pool: jsdom parses the page, Readability finds the article and
// its metadata, turndown with the GFM plugin writes the Markdown. Prints one JSON line:
// {perCore: pages per CPU-second per round, peakMb}.
import { Worker } from 'node:worker_threads';
import { readFileSync } from 'node:fs';

const rssMb = () => {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) / 1024 : process.memoryUsage().rss / 1048576;
};

{
  const { pages, threads, rounds, perRound } = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as {
    pages: string[];
    threads: number;
    rounds: number;
    perRound: number;
  };
  let peak = rssMb();
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb());
  }, 50);
  const workers = Array.from(
    { length: threads },
    () => new Worker(new URL('./converter-direct-thread.mjs', import.meta.url), { workerData: { pages } }),
  );
  const run = (w: Worker, from: number, n: number) =>
    new Promise<void>((resolve) => {
      w.once('message', () => resolve());
      w.postMessage({ from, n });
    });
  const share = (n: number) => Array.from({ length: threads }, (_, i) => Math.floor(n / threads) + (i < n % threads ? 1 : 0));
  await Promise.all(workers.map((w, i) => run(w, i, pages.length))); // warm up
  const perCore: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const c0 = process.cpuUsage();
    await Promise.all(share(perRound).map((n, i) => run(workers[i]!, i, n)));
    const d = process.cpuUsage(c0);
    perCore.push(perRound / ((d.user + d.system) / 1e6));
  }
  clearInterval(sampler);
  peak = Math.max(peak, rssMb());
  await Promise.all(workers.map((w) => w.terminate()));
  console.log(JSON.stringify({ perCore, peakMb: peak }));
  // the bench talks to this process over IPC, which would keep it alive
  process.exit(0);
}
