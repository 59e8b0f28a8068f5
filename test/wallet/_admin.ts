// Runs the operator CLI as `npm run admin` does, against a test nats-server.
import { execFile } from 'node:child_process';
import { tempDir } from '../helpers/nats.ts';
import { ROOT } from '../../shared/config/index.ts';

export function admin(
  natsUrl: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['admin/main.ts', ...args],
      {
        cwd: ROOT,
        env: { ...process.env, NATS_URL: natsUrl, DATA_DIR: tempDir('payloads-admin-'), LOG_LEVEL: 'warn', CONFIG_FILE: '', ...env },
      },
      (err, out, errOut) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out, err: errOut }),
    );
  });
}
