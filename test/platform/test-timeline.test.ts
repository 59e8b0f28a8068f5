// The suite's timing tools (docs/testing.md "How to measure"): the recorder preloaded into a test
// file's process writes one line at its exit, with the pid that scripts/diagnostics/acct-summary.ts attributes
// child processes by, and nothing in a process that is not a test file; the summary reads the lines.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { tempDir } from '../helpers/nats.ts';

const recorder = join(import.meta.dirname, '../../scripts/diagnostics/test-timeline-record.mjs');

t.test('a test file process: one line with its pid, phases in order; another process: none', async (t) => {
  const dir = tempDir('payloads-timeline-');
  mkdirSync(join(dir, 'test'));
  const out = join(dir, 'timeline.jsonl');
  writeFileSync(join(dir, 'test', 'x.test.ts'), 'console.log("ok 1");\nconsole.log(process.pid);\n');
  writeFileSync(join(dir, 'other.ts'), 'console.log("not a test file");\n');
  // without the suite's own preloads: a run timed through NODE_OPTIONS would load a second recorder
  const { NODE_OPTIONS: _, ...rest } = process.env;
  const env = { ...rest, TEST_TIMELINE: out };
  const printed = execFileSync(process.execPath, [`--import=${recorder}`, join(dir, 'test', 'x.test.ts')], { env, encoding: 'utf8' });
  execFileSync(process.execPath, [`--import=${recorder}`, join(dir, 'other.ts')], { env, encoding: 'utf8' });
  const lines = readFileSync(out, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  t.equal(lines.length, 1, 'only the test file wrote');
  const [l] = lines;
  t.equal(l.file, 'test/x.test.ts');
  t.equal(l.pid, Number(printed.trim().split('\n')[1]), 'the pid of the test file process');
  t.ok(
    l.origin <= l.pre && l.pre <= l.first && l.first <= l.last && l.last <= l.end,
    'start, preload, first and last output, exit in order',
  );
  t.ok(l.cpu > 0, 'its CPU');
  const summary = execFileSync(process.execPath, [join(import.meta.dirname, '../../scripts/diagnostics/test-timeline.ts'), out], {
    encoding: 'utf8',
  });
  t.match(summary, /^1 files in \d+ s; summed over files: boot \d+ s, imports \d+ s, tests \d+ s, after \d+ s/);
});
