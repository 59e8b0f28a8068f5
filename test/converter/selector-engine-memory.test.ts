// The selector engine shared by every page of a thread (convert.ts) caches, per selector, the node
// it last ran from and the nodes it found. Those caches must not keep an earlier page alive once
// its conversion is over: a 2 MB page stayed in the heap (~1 GB more) for good through a selector
// no later page asked, and a converter worker's heap is capped. Checked in a process of its own
// (selector-engine-memory-probe.ts), where nothing else holds the pages.
import t from 'tap';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

t.test('pages asked by the shared selector engine are garbage once converted, in both compatibility modes', async (t) => {
  const probe = fileURLToPath(new URL('./selector-engine-memory-probe.ts', import.meta.url));
  const { stdout } = await promisify(execFile)(process.execPath, [probe], { timeout: 60000 });
  const result = JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, boolean>;
  t.same(Object.keys(result).length, 4, JSON.stringify(result));
  for (const [what, ok] of Object.entries(result)) t.ok(ok, what);
});
