// The processes a test starts run without tap's processinfo (test/helpers/tap-children.ts): the
// actor processes, `main.ts` and browser helpers of the suite start as they do in production, and
// without the 0.3-1 s of CPU each that processinfo's module hooks cost them on Node 22. This file
// does not import the helper: it checks what package.json's tap "node-arg" loads.
import t from 'tap';
import { execFileSync, spawn, spawnSync } from 'node:child_process';

const PROCESSINFO = Symbol.for('@tapjs/processinfo.ProcessInfoNodeData');
// what a child reports: its NODE_OPTIONS, whether processinfo registered itself in it
const REPORT = `console.log(JSON.stringify({ nodeOptions: process.env.NODE_OPTIONS ?? null, processinfo: Symbol.for('@tapjs/processinfo.ProcessInfoNodeData') in globalThis }))`;

t.test('the test process itself still runs under processinfo (tap adds it to the command line)', async (t) => {
  t.ok(
    PROCESSINFO in globalThis,
    'processinfo registered in this process: if not, tap changed how it starts tests; see test/helpers/tap-children.ts',
  );
  t.notMatch(process.env.NODE_OPTIONS ?? '', /@tapjs\/processinfo/, 'NODE_OPTIONS cleaned for children');
});

t.test('a child started with the environment inherited does not load processinfo', async (t) => {
  const r = JSON.parse(execFileSync(process.execPath, ['-e', REPORT], { encoding: 'utf8' }));
  t.equal(r.processinfo, false, 'processinfo not loaded in the child');
  t.notMatch(r.nodeOptions ?? '', /@tapjs\/processinfo/, 'nor in its NODE_OPTIONS');
  t.notMatch(r.nodeOptions ?? '', /tap-no-hooks/, "nor scripts/tap.sh's preload (children start as in production)");
});

t.test('nor one started with an environment of its own, sync or async', async (t) => {
  const env = { PATH: process.env.PATH ?? '', ONLY: '1' };
  const sync = JSON.parse(spawnSync(process.execPath, ['-e', REPORT], { encoding: 'utf8', env }).stdout);
  t.equal(sync.processinfo, false, 'spawnSync: processinfo not loaded');
  const child = spawn(process.execPath, ['-e', REPORT], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  await new Promise((resolve) => child.once('close', resolve));
  const r = JSON.parse(out);
  t.equal(r.processinfo, false, 'spawn: processinfo not loaded');
  t.equal(r.nodeOptions, null, 'and no NODE_OPTIONS added to an environment that had none');
});
