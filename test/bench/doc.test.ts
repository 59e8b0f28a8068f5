// docs/performance.md is rewritten by a full bench run: the table and the generated explanation
// are replaced, the hand-written sections of a service (Converter, Shots) stay where they stood.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXPLANATION, explanationKeeping, writePerformanceDoc } from '../../bench/lib/doc.ts';

const run = {
  startedAt: 'a',
  finishedAt: 'b',
  command: 'npm run bench',
  machine: { cpu: 'cpu', cores: 2, memoryGb: 1, os: 'linux', loadavgAtStart: [0, 0, 0] },
  versions: { node: 'v20' },
};

t.test('a first run writes the table and the generated explanation', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'perf-doc-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'performance.md');
  writePerformanceDoc(file, run, '| table one |');
  const text = readFileSync(file, 'utf8');
  t.match(text, '| table one |');
  t.ok(text.endsWith(EXPLANATION));
});

t.test('a later run keeps hand-written sections in place and replaces the rest', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'perf-doc-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'performance.md');
  writePerformanceDoc(file, run, '| table one |');
  // a service's write-up added by hand after the Pipeline section, and one at the end
  const first = readFileSync(file, 'utf8')
    .replace('### Memory', '### Converter (by hand)\n\nConverter figures.\n\n### Memory')
    .concat('\n### Shots (by hand)\n\nShots figures.\n')
    // a generated section edited in the doc only: the code's text wins
    .replace('### Services\n', '### Services\n\nstale words\n');
  writeFileSync(file, first);
  writePerformanceDoc(file, run, '| table two |');
  const text = readFileSync(file, 'utf8');
  t.match(text, '| table two |');
  t.notMatch(text, '| table one |');
  t.notMatch(text, 'stale words');
  const order = [
    '### Pipeline',
    '### Converter (by hand)',
    'Converter figures.',
    '### Memory',
    '### Services',
    '### Shots (by hand)',
    'Shots figures.',
  ].map((h) => text.indexOf(h));
  t.ok(
    order.every((x, i) => x > 0 && (i === 0 || x > order[i - 1]!)),
    `sections in order: ${order.join(', ')}`,
  );
  t.equal(explanationKeeping(text), text.slice(text.indexOf('## What the figures mean')), 'a third run changes nothing');
});
