// Where each test file's wall time goes, seen from inside its own process (issue 30, session 20):
//
//   TEST_TIMELINE=/tmp/timeline.jsonl npx tap --node-arg=--import=./test/helpers/tap-children.ts \
//     --node-arg=--import=./scripts/diagnostics/test-timeline-record.mjs ...
//
// (a --node-arg on the command line replaces package.json's list, so tap-children.ts is named again)
//   node scripts/diagnostics/test-timeline.ts /tmp/timeline.jsonl
//
// scripts/diagnostics/test-timeline-record.mjs, loaded with --import into a test file's process (after tap's
// own preloads), writes one line per file at exit: when the process started, when the preload ran
// (tap's preloads done), its first and last TAP output, its exit, its CPU and its pid. This script
// sums a run's lines into four phases: boot (node and tap's preloads: processinfo's hook thread is most of it), imports
// (the test file's own imports, tap's Test class included, up to its first output), tests (to the
// root test's end, which tap writes last) and after (teardown after the root ended, and whatever
// else keeps the process alive: a timer left running shows here). tap's `# time=` covers only the
// tests phase.
import { readFileSync } from 'node:fs';

interface Line {
  file: string;
  pid: number;
  origin: number;
  pre: number;
  first: number;
  last: number;
  end: number;
  cpu: number;
}

const main = process.argv[1] ?? '';

if (/test-timeline\.ts$/.test(main)) {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node scripts/diagnostics/test-timeline.ts <timeline.jsonl>');
    process.exit(2);
  }
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line);
  const phases = (l: Line) => ({ boot: l.pre - l.origin, imports: l.first - l.pre, tests: l.last - l.first, after: l.end - l.last });
  const sum = { boot: 0, imports: 0, tests: 0, after: 0, cpu: 0 };
  for (const l of lines) {
    const p = phases(l);
    sum.boot += p.boot;
    sum.imports += p.imports;
    sum.tests += p.tests;
    sum.after += p.after;
    sum.cpu += l.cpu * 1000;
  }
  const s = (ms: number) => `${(ms / 1000).toFixed(0)} s`;
  const span = Math.max(...lines.map((l) => l.end)) - Math.min(...lines.map((l) => l.origin));
  console.log(
    `${lines.length} files in ${s(span)}; summed over files: boot ${s(sum.boot)}, imports ${s(sum.imports)}, tests ${s(sum.tests)}, after ${s(sum.after)}; their own CPU ${s(sum.cpu)}`,
  );
  const top = (label: string, key: (l: Line) => number) => {
    console.log(`\nlongest ${label}:`);
    for (const l of [...lines].sort((a, b) => key(b) - key(a)).slice(0, 10))
      console.log(`${(key(l) / 1000).toFixed(1).padStart(7)} s  ${l.file}`);
  };
  top('after (alive after the root test ended)', (l) => phases(l).after);
  top('boot + imports', (l) => phases(l).boot + phases(l).imports);
}
