// At most BROWSER_FILES_AT_ONCE test files that start browsers (test/shots) run at once in one tap
// run, whatever tap's `jobs`: test/helpers/tap-children.ts takes a slot before such a file's code
// runs. tap runs its files in path order with no order setting, so the lighter files (nats-servers and
// apps that mostly wait) come first and leave CPU idle at three at a time, while the shots are
// load-sensitive by design (caps, the stuck-thread watch) and failed at four at once (session 21).
// Four files at a time with three browser files at most fills the first and keeps the second.
//
// A slot is a file `slot-<i>` made with O_EXCL in a folder of the tap run (named after the runner's
// pid: every test file is its child), holding the holder's pid; it is removed when the holder exits.
// A holder killed without its exit handler leaves its file: a waiter that finds the pid gone takes
// it back (two waiters doing so at the same moment can both get in: one file too many for a while).
import { closeSync, mkdirSync, openSync, readFileSync, rmdirSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const BROWSER_FILES_AT_ONCE = 3;

/** Whether the test file of this process starts browsers (it runs under a slot). */
export const isBrowserFile = (file: string | undefined) => /[\\/]?test[\\/]shots[\\/][^\\/]+\.test\.ts$/.test(file ?? '');

/** The slots' folder of the tap run this process belongs to. */
export const slotDir = (runner = process.ppid) => join(tmpdir(), `payloads-browser-slots-${runner}`);

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

function holderOf(file: string): number {
  try {
    return Number(readFileSync(file, 'utf8'));
  } catch {
    return NaN;
  }
}

/** Take one of `n` slots in `dir`, waiting while all are held by live processes; given back when this process exits. */
export async function takeSlot(dir: string, n: number, pollMs = 200): Promise<string> {
  mkdirSync(dir, { recursive: true });
  for (;;) {
    for (let i = 0; i < n; i++) {
      const file = join(dir, `slot-${i}`);
      let fd: number;
      try {
        fd = openSync(file, 'wx');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        const holder = holderOf(file);
        if (Number.isSafeInteger(holder) && holder > 0 && !alive(holder)) {
          try { unlinkSync(file); } catch { /* another waiter took it back first */ }
        }
        continue;
      }
      writeSync(fd, String(process.pid));
      closeSync(fd);
      process.once('exit', () => {
        try {
          if (holderOf(file) === process.pid) unlinkSync(file);
          rmdirSync(dir); // the last one out; fails while other slots are held
        } catch { /* held by others, or gone */ }
      });
      return file;
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
