// Stopping as a user or a supervisor does: `npm start` and `npm run cluster` run in their own
// process group, and SIGINT (a terminal's Ctrl-C) or SIGTERM (`docker stop`, systemd) goes to the
// whole group. Everything the run started (nats-server, Chromium, Firefox, actor processes) must be
// gone within 10 s, with every stop step finished.
import t, { type Test } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../shared/config/index.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { tempDir } from '../helpers/nats.ts';
import { descendants, stillAlive, type Proc } from '../helpers/proctree.ts';

// `npm start` runs scripts/setup.sh first, which reinstalls node_modules when package.json or the
// lock is newer than it (`npm test` ran setup just before, so in CI it is a no-op). A reinstall in
// the middle of a test run would pull the packages from under every other test: skip instead.
const stamp = join(ROOT, 'node_modules', '.package-lock.json');
const setupWouldInstall =
  !existsSync(stamp) || ['package.json', 'package-lock.json'].some((f) => statSync(join(ROOT, f)).mtimeMs > statSync(stamp).mtimeMs);
if (setupWouldInstall) t.comment('node_modules is older than package.json: run `npm run setup` first');

interface Run {
  child: ChildProcess;
  out: () => string;
  closed: Promise<void>;
}

async function startRun(args: string[], env: Record<string, string>): Promise<Run> {
  const child = spawn('npm', args, {
    detached: true, // a process group of its own, as a shell gives a foreground job
    env: {
      ...process.env,
      DATA_DIR: tempDir('payloads-stop-'),
      PORT: '0',
      NATS_PORT: '0',
      NATS_URL: '',
      BROWSERS: 'chromium,firefox',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  // both pipes close only when every process holding them (the whole tree) has ended
  const closed = Promise.all([new Promise((r) => child.stdout!.once('close', r)), new Promise((r) => child.stderr!.once('close', r))]).then(
    () => {},
  );
  const deadline = Date.now() + 180_000;
  while (!out.includes('Ctrl-C stops everything')) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${args.join(' ')} did not start:\n${out}`);
    await sleep(200);
  }
  return { child, out: () => out, closed };
}

function killTree(run: Run, procs: Proc[]) {
  try {
    process.kill(-run.child.pid!, 'SIGKILL');
  } catch {
    /* gone */
  }
  for (const p of stillAlive(procs))
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
}

async function stopsCleanly(t: Test, started: Promise<Run>, signal: NodeJS.Signals, expect: { nats: number; actors: number }) {
  const run = await started;
  let procs = descendants(run.child.pid!);
  t.teardown(() => killTree(run, procs));
  // browsers of a pool are launched before it reports ready; give a slow one a moment to show up
  for (let i = 0; i < 50 && !procs.some((p) => p.comm.startsWith('firefox')); i++) {
    await sleep(200);
    procs = descendants(run.child.pid!);
  }
  const names = procs.map((p) => p.comm);
  t.equal(names.filter((n) => n === 'nats-server').length, expect.nats, `${expect.nats} nats-server process(es) run`);
  t.ok(names.includes('chromium'), 'Chromium runs');
  t.ok(
    names.some((n) => n.startsWith('firefox')),
    'Firefox runs',
  );
  t.ok(names.filter((n) => n === 'node').length >= expect.actors, `at least ${expect.actors} node process(es)`);

  const t0 = Date.now();
  const outBefore = run.out().length;
  process.kill(-run.child.pid!, signal);
  while (stillAlive(procs).length && Date.now() - t0 < 15_000) await sleep(100);
  const ms = Date.now() - t0;
  t.same(
    stillAlive(procs).map((p) => `${p.comm} ${p.pid}`),
    [],
    'no process of the run is left',
  );
  t.ok(ms < 10_000, `everything ended within 10 s (${ms} ms)`);
  await Promise.race([run.closed, sleep(2000)]);
  t.match(run.out(), /stopped/, 'the service reports its stop');
  t.notMatch(run.out(), /left behind|did not finish|exiting anyway/, 'no stop step missed its deadline');
  // only what came after the signal: a loaded machine can miss a heartbeat at start-up too
  t.notMatch(run.out().slice(outBefore), /heartbeats missed/, 'NATS stayed up until the actors had stopped');
}

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;
type Signal = (typeof SIGNALS)[number];

/**
 * The SIGINT run and the SIGTERM run of `npm start` are started together (each its own process
 * group, data folder and free ports) when the first of their two tests begins, and stopped one
 * after the other: the second waits, started and idle, while the first is stopped. Each run is
 * still a whole `npm start` of its own, and each stop is timed alone. The two `npm run cluster`
 * runs (three nodes and six processes each) start one at a time: two together on a loaded 2-core
 * machine kept a browser-pool from being ready within the launcher's 60 s.
 */
const pairs = new Map<string, Record<Signal, Promise<Run>>>();
function started(args: string[], env: Record<string, string>, signal: Signal, together: boolean): Promise<Run> {
  if (!together) return startRun(args, env);
  const key = args.join(' ');
  if (!pairs.has(key)) {
    const runs = { SIGINT: startRun(args, env), SIGTERM: startRun(args, env) };
    for (const run of Object.values(runs)) {
      run.catch(() => {}); // reported by the test that awaits it
      // a run whose test never stopped it (a filtered or failed test) must not outlive the file
      t.teardown(async () => {
        const r = await run.catch(() => undefined);
        if (r) killTree(r, descendants(r.child.pid!));
      });
    }
    pairs.set(key, runs);
  }
  const runs = pairs.get(key)!;
  // both started before either is stopped: a stop is never timed beside the other's start
  return Promise.allSettled(Object.values(runs)).then(() => runs[signal]);
}

const skip = setupWouldInstall && 'setup would reinstall node_modules';

for (const signal of SIGNALS) {
  t.test(`npm start: ${signal} to the process group stops everything`, { skip }, (t) =>
    stopsCleanly(t, started(['start'], {}, signal, true), signal, { nats: 1, actors: 1 }),
  );
}

for (const signal of SIGNALS) {
  t.test(`npm run cluster: ${signal} to the process group stops everything`, { skip }, (t) =>
    stopsCleanly(
      t,
      started(
        ['run', 'cluster'],
        {
          CLUSTER_RANDOM_PORTS: '1',
          // one browser-pool (not two) keeps the run light on a 2-core machine
          CLUSTER_PROCESSES: 'wallet,job-supervisor,converter,browser-pool,relay-prober,gateway',
        },
        signal,
        false,
      ),
      signal,
      { nats: 3, actors: 7 },
    ),
  );
}
