// Run the `payloads` CLI as a child process (the bin a user gets from `npx payloads`), never
// blocking this process: the gateway under test runs in it.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../../shared/config/index.ts';

export const CLI_BIN = join(ROOT, 'client/bin/payloads.mjs');

export interface CliRun {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

export function startCli(args: string[], env: Record<string, string>, cwd = ROOT): CliRun {
  const child = spawn(process.execPath, [CLI_BIN, ...args], {
    cwd,
    // no config file of the machine's user may leak in
    env: { PATH: process.env.PATH ?? '', HOME: '/nonexistent', PAYLOADS_CONFIG: '/nonexistent/config.json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout: out, stderr: err })),
  );
  return { child, stdout: () => out, stderr: () => err, done };
}

export const runCli = (args: string[], env: Record<string, string>, cwd?: string) => startCli(args, env, cwd).done;
