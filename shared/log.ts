import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(name: string, level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    name,
    level,
    base: { pid: process.pid },
    // Keys never reach a log line, whatever a caller passes.
    redact: { paths: ['authorization', 'headers.authorization', 'req.headers.authorization', 'key', 'apiKey'], censor: '[redacted]' },
  });
}
