import { closeSync, openSync, renameSync, statSync, writeSync } from 'node:fs';
import { pino, type Logger } from 'pino';

export type { Logger };

/** `stderr`: for command-line tools whose stdout is their answer (the admin CLI's `--json`). */
export function createLogger(name: string, level = process.env.LOG_LEVEL ?? 'info', { stderr = false } = {}): Logger {
  return pino(
    {
      name,
      level,
      base: { pid: process.pid },
      // Keys never reach a log line, whatever a caller passes.
      redact: { paths: ['authorization', 'headers.authorization', 'req.headers.authorization', 'key', 'apiKey'], censor: '[redacted]' },
    },
    stderr ? pino.destination(2) : undefined,
  );
}

/** Where a log file on disk (a NATS node's, a cluster actor's output) stops growing: past it the
 *  file becomes `<file>.1` and a new one starts. */
export const LOG_FILE_MAX_BYTES = 10 * 2 ** 20;

/** An append-only file rotated at `max` bytes; a failed write (a full disk) is dropped, never thrown. */
export function rotatingFile(file: string, max = LOG_FILE_MAX_BYTES) {
  let fd: number | undefined;
  let size = 0;
  const open = () => {
    try {
      fd = openSync(file, 'a');
      size = statSync(file).size;
    } catch {
      fd = undefined;
    }
  };
  open();
  return {
    write(d: Buffer) {
      if (fd === undefined) return;
      try {
        if (size + d.length > max) {
          closeSync(fd);
          renameSync(file, `${file}.1`);
          open();
          if (fd === undefined) return;
        }
        size += writeSync(fd, d);
      } catch {
        /* the log is a help, not a duty */
      }
    },
    close() {
      if (fd !== undefined)
        try {
          closeSync(fd);
        } catch {
          /* closed */
        }
      fd = undefined;
    },
  };
}
