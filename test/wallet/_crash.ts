// Shared by the crash tests: the wallet as its own process (main.ts wallet), killed with SIGKILL.
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestNats } from '../helpers/nats.ts';
import { ApiError } from '../../shared/errors.ts';
import { ROOT } from '../../shared/config/index.ts';

type Tap = { teardown(fn: () => unknown): void };

export async function spawnWallet(t: Tap, tn: TestNats, dataDir: string, fault = ''): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['main.ts', 'wallet'], {
    cwd: ROOT,
    env: { ...process.env, NATS_URL: tn.server.url, DATA_DIR: dataDir, LOG_LEVEL: 'warn', WALLET_FAULT: fault, CONFIG_FILE: '' },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`wallet process exited early (${code})`)));
  });
  return child;
}

export const exited = (c: ChildProcess) =>
  new Promise<NodeJS.Signals | null>((r) =>
    c.exitCode !== null || c.signalCode !== null ? r(c.signalCode) : c.once('exit', (_code, sig) => r(sig)),
  );

/** A client that retries a wallet call until some instance answers it, as the gateway and supervisor do. */
export async function retry<T>(fn: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 'service_unavailable') || i > 200) throw e;
      await sleep(100);
    }
  }
}
