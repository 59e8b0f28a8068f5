// The benches' per-process figures (bench/lib/embedded.ts): RSS and CPU seconds of a process tree,
// grouped as the history bench reports them (the root `node`, `nats-server`, everything else
// `browsers`). The history bench's "CPU seconds during the traffic" rows are differences of these.
import t from 'tap';
import { spawn } from 'node:child_process';
import { treeCpu, treeRss } from '../../bench/lib/embedded.ts';

t.test('a child that burns CPU is counted below its parent, and only what it used', async (t) => {
  const before = treeCpu(process.pid);
  // ~600 ms of CPU, then idle until killed
  const child = spawn(process.execPath, ['-e', 'const e = Date.now() + 600; while (Date.now() < e); setInterval(() => {}, 1000);'], { stdio: 'ignore' });
  t.teardown(() => { child.kill('SIGKILL'); });
  await new Promise((r) => setTimeout(r, 1500));
  const after = treeCpu(process.pid);
  const used = after.browsers! - (before.browsers ?? 0);
  t.ok(used >= 0.4 && used <= 1.5, `the child used ${used.toFixed(2)} s of CPU (it burned ~0.6 s)`);
  t.ok(after.node! >= before.node!, 'the root\'s own time only grows');
  t.equal(after['nats-server'], 0, 'no nats-server below this process');
  const rss = treeRss(process.pid);
  t.ok(rss.node! > 10 && rss.browsers! > 10, `RSS of the root ${rss.node} MB and of the child ${rss.browsers} MB`);
});
