// The recording half of scripts/diagnostics/test-timeline.ts (issue 30), loaded with --import into test file
// processes: one line per file at exit (when the process started, when this module ran, its first
// and last TAP output, its exit, its CPU, its pid) appended to $TEST_TIMELINE. Plain JavaScript so
// that it can also be given through NODE_OPTIONS to a whole `.ci/run`, which npm's own Node (the
// machine's, 20 here) reads too; it does nothing in a process that is not a test file.
import { appendFileSync } from 'node:fs';

const out = process.env.TEST_TIMELINE;
const main = process.argv[1] ?? '';

if (out && /\.test\.ts$/.test(main)) {
  const pre = Date.now();
  let first = 0;
  let last = 0;
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = (...a) => {
    last = Date.now();
    first ||= last;
    return write(...a);
  };
  process.on('exit', () => {
    const cpu = process.cpuUsage();
    const line = {
      file: main.slice(main.lastIndexOf('/test/') + 1),
      pid: process.pid,
      origin: Math.round(performance.timeOrigin),
      pre,
      first: first || pre,
      last: last || pre,
      end: Date.now(),
      cpu: (cpu.user + cpu.system) / 1e6,
    };
    appendFileSync(out, `${JSON.stringify(line)}\n`);
  });
}
