// Loaded into every test file's process after tap's own modules (package.json "tap" "node-arg").
//
// tap's @tapjs/processinfo records every process a test starts, for coverage and `tap --changed`;
// this suite uses neither (coverage is off). To follow the process tree it hooks every spawn (the
// `process-on-spawn` package) and puts its own `--import` in the child's NODE_OPTIONS. On Node 22
// its module hooks run on a thread of their own, and a child that loads one actor and the gateway
// used 1.4 s of CPU without it and 2.4 s with it (`node -e "await import(...)"`, 3 runs each).
// Every actor process, `main.ts`, cluster launcher and browser namespace helper a test starts paid
// that. Here the hook is taken off and NODE_OPTIONS cleaned, so children start as they do in
// production; the test file's own process keeps processinfo's main-thread part (tap's runner adds
// it to the command line, which this cannot change; its module hooks are dropped by
// test/helpers/tap-no-hooks.mjs, whose entry in NODE_OPTIONS is taken out here too).
// test/platform/tap-children.test.ts checks both: the day a tap upgrade changes how processinfo
// reaches children, it fails and says so.

/** process-on-spawn keeps its listeners on a global, shared by every copy of the package. */
const ON_SPAWN = Symbol.for('process-on-spawn@*:singletonId');
const onSpawn = (globalThis as unknown as Record<symbol, { listeners?: unknown[] } | undefined>)[ON_SPAWN];
if (onSpawn?.listeners) onSpawn.listeners.length = 0;

/** NODE_OPTIONS without processinfo's `--import=.../@tapjs/processinfo/...` (one token, maybe quoted)
 *  and without test/helpers/tap-no-hooks.mjs (scripts/tap.sh puts it there for the test files). */
function withoutProcessinfo(nodeOptions: string | undefined): string | undefined {
  const kept = (nodeOptions ?? '').split(/\s+/).filter((a) => a && !a.includes('@tapjs/processinfo') && !a.includes('tap-no-hooks.mjs'));
  return kept.length ? kept.join(' ') : undefined;
}

const cleaned = withoutProcessinfo(process.env.NODE_OPTIONS);
if (cleaned === undefined) delete process.env.NODE_OPTIONS;
else process.env.NODE_OPTIONS = cleaned;
