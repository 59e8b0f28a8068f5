// `main.ts` (the embedded default) as a child process for the platform tests: started on a data
// folder of the test's own, answered once it prints its API URL.
import { spawn, type ChildProcess } from 'node:child_process';

/** Start `main.ts` with these environment settings over the test's own; answers once its API URL is printed. */
export function startMain(
  dataDir: string,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; api: string; out: () => string }> {
  const child = spawn(process.execPath, ['main.ts'], {
    env: { ...process.env, DATA_DIR: dataDir, PORT: '0', NATS_PORT: '0', BROWSERS: 'chromium', LOG_LEVEL: 'warn', NATS_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`main did not start in 120 s:\n${out}`));
    }, 120_000);
    const check = setInterval(() => {
      const m = /API:\s+(\S+)\/v1/.exec(out);
      if (m) {
        clearInterval(check);
        clearTimeout(timer);
        resolve({ child, api: m[1]!, out: () => out });
      }
    }, 100);
    child.once('exit', (code) => {
      clearInterval(check);
      clearTimeout(timer);
      reject(new Error(`main exited with ${code}:\n${out}`));
    });
  });
}

/** SIGINT, as Ctrl-C; answers the exit code. */
export const stopMain = (child: ChildProcess) =>
  new Promise<number | null>((r) => {
    child.once('exit', (c) => r(c));
    child.kill('SIGINT');
  });
