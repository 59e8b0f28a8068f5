import { pino, type Logger } from 'pino';

export type { Logger };

/** `stderr`: for command-line tools whose stdout is their answer (the admin CLI's `--json`). */
export function createLogger(name: string, level = process.env.LOG_LEVEL ?? 'info', { stderr = false } = {}): Logger {
  return pino({
    name,
    level,
    base: { pid: process.pid },
    // Keys never reach a log line, whatever a caller passes.
    redact: { paths: ['authorization', 'headers.authorization', 'req.headers.authorization', 'key', 'apiKey'], censor: '[redacted]' },
  }, stderr ? pino.destination(2) : undefined);
}
