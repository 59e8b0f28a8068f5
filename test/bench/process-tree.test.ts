// The benches' per-process figures (bench/lib/embedded.ts): RSS and CPU seconds of a process tree,
// grouped as the history bench reports them (the root `node`, `nats-server`, everything else
// `browsers`). The history bench's "CPU seconds during the traffic" rows are differences of these.
import t from 'tap';
import { spawn } from 'node:child_process';
import { treeCpu, treeRss } from '../../bench/lib/embedded.ts';

t.test('a child that burns CPU is counted below its parent, and only what it used', async (t) => {
  const before = treeCpu(process.pid);
  // 600 ms of its own CPU time (not of the clock: a loaded machine gives it less per second), then
  // it says so and idles until killed
  const child = spawn(
    process.execPath,
    // (its clock is read between runs of plain work: read in a tight loop, the reads themselves are
    // system time, seconds of it on a loaded machine)
    [
      '-e',
      'let x = 0; while (process.cpuUsage().user < 600_000) for (let i = 0; i < 1e6; i++) x += i; console.log("done", x > 0); setInterval(() => {}, 1000);',
    ],
    // without the test runner's preloads (NODE_OPTIONS): their start-up work is not what is measured
    { stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, NODE_OPTIONS: '' } },
  );
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  await new Promise((r) => child.stdout!.once('data', r));
  const after = treeCpu(process.pid);
  const used = after.browsers! - (before.browsers ?? 0);
  // at least its 0.6 s of user time (less one 10 ms tick), at most that and its start and exit work
  t.ok(used >= 0.59 && used <= 3, `the child used ${used.toFixed(2)} s of CPU (it burned 0.6 s)`);
  t.ok(after.node! >= before.node!, "the root's own time only grows");
  t.equal(after['nats-server'], 0, 'no nats-server below this process');
  const rss = treeRss(process.pid);
  t.ok(rss.node! > 10 && rss.browsers! > 10, `RSS of the root ${rss.node} MB and of the child ${rss.browsers} MB`);
});
