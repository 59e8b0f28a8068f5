// Child processes of the benchmark: actors (main.ts), baseline servers, the load generator.
// Every process started here is remembered and stopped by its own pid at the end.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../shared/config/index.ts';

export interface Proc {
  name: string;
  pid: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

const running = new Set<Proc>();

const ORPHAN_GUARD = 'data:text/javascript,process.once("disconnect",()=>process.kill(process.pid,"SIGTERM"))';

/** `node --import tsx <script> ...args` from the repository root. */
export function spawnTs(
  name: string,
  script: string,
  args: string[],
  env: Record<string, string>,
  stdin = false,
  nodeFlags: string[] = [],
): Proc {
  // every child has an IPC channel and ends itself when it closes, so a bench that dies (even by
  // SIGKILL) leaves no actor, baseline or load generator behind
  const child = spawn(process.execPath, [...nodeFlags, '--import', ORPHAN_GUARD, join(ROOT, script), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const p: Proc = {
    name,
    pid: child.pid!,
    child,
    async stop() {
      running.delete(p);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.stdin?.end();
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
  Object.defineProperty(p, 'stderr', { get: () => stderr });
  running.add(p);
  return p;
}

export const stderrOf = (p: Proc) => (p as unknown as { stderr: string }).stderr;

/** Wait for a stdout line matching `re` (or an IPC `ready` message when re is null). */
export function waitReady(p: Proc, re: RegExp | null, timeoutMs = 60_000): Promise<RegExpExecArray | null> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => done(new Error(`${p.name}: not ready within ${timeoutMs} ms\n${stderrOf(p)}`)), timeoutMs);
    const onExit = (code: number | null) => done(new Error(`${p.name} exited (${code}) before it was ready:\n${stderrOf(p)}`));
    const onData = (d: Buffer) => {
      buf += d.toString();
      if (!re) return;
      const m = re.exec(buf);
      if (m) done(null, m);
      buf = buf.slice(-4000);
    };
    const onMsg = (m: unknown) => {
      if (!re && m && typeof m === 'object' && 'ready' in m) done(null, null);
    };
    function done(err: Error | null, m: RegExpExecArray | null = null) {
      clearTimeout(timer);
      p.child.off('exit', onExit);
      p.child.stdout!.off('data', onData);
      p.child.off('message', onMsg);
      // keep draining stdout so a chatty child never blocks on a full pipe
      p.child.stdout!.resume();
      if (err) reject(err);
      else resolve(m);
    }
    p.child.once('exit', onExit);
    p.child.stdout!.on('data', onData);
    p.child.on('message', onMsg);
  });
}

/** Run a script to completion and return its stdout. */
export function runTs(
  name: string,
  script: string,
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 300_000,
): Promise<string> {
  const p = spawnTs(name, script, args, env);
  let out = '';
  p.child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      void p.stop();
      reject(new Error(`${name}: timed out`));
    }, timeoutMs);
    p.child.once('exit', (code) => {
      clearTimeout(t);
      running.delete(p);
      if (code === 0) resolve(out);
      else reject(new Error(`${name} exited with ${code}:\n${stderrOf(p)}`));
    });
  });
}

export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop()));
}

/** Resident set size of a process in MB (VmRSS), or NaN when it is gone. */
export function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}
