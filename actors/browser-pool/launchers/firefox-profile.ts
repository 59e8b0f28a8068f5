// A Firefox profile template, per Firefox build: made once by a launch that opens nothing and is
// closed at once, then copied for every launch. A new profile costs Firefox its whole first-run
// work at every launch (compiling its own scripts into the startup cache, registering its built-in
// add-ons, creating its databases): 7.3 s of CPU for a launch, a blank page and a close, against
// 4.7 s from a copy of the template (session 21, docs/shots.md "Firefox profiles").
//
// What the template may hold is what Firefox derives from its own installation: it is made from a
// launch that loaded no page, its preferences file is dropped (each launch's preferences are written
// by puppeteer), and so are session, cache and crash files. It lives in the temporary folder, one
// folder per user and build, made under a private name and renamed into place whole; it is used
// only while owned by this user and closed to everyone else (mode 0700): a folder anyone else could
// have written is code in our browser, and is then ignored (every launch makes a fresh profile, as
// before the template). Any failure to make or copy it falls back to a fresh profile too.
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Browser } from 'puppeteer-core';
import { processAlive } from '../../../shared/runtime.ts';

/** Left out of the template: per-launch preferences, locks, session, caches, crash and usage data. */
const NOT_IN_TEMPLATE = [
  'prefs.js',
  'prefs.js.puppeteer',
  'user.js',
  'user.js.puppeteer',
  'lock',
  '.parentlock',
  'sessionstore.jsonlz4',
  'sessionstore-backups',
  'sessionCheckpoints.json',
  'cache2',
  'crashes',
  'minidumps',
  'datareporting',
  'saved-telemetry-pings',
  'thumbnails',
];

/** The build of the Firefox at `executable` (its application.ini's BuildID), or null if it cannot be read. */
export function firefoxBuildId(executable: string): string | null {
  try {
    const ini = readFileSync(join(dirname(realpathSync(executable)), 'application.ini'), 'utf8');
    const id = /^BuildID=(\d+)\s*$/m.exec(ini)?.[1];
    return id ?? null;
  } catch {
    return null;
  }
}

const isLink = (p: string) => {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
};

/** Whether `dir` is a template this user made: a directory owned by us, closed to everyone else. */
export function trustedTemplate(dir: string): boolean {
  try {
    const st = lstatSync(dir);
    return (
      st.isDirectory() && st.uid === process.getuid?.() && (st.mode & 0o077) === 0 && lstatSync(join(dir, 'compatibility.ini')).isFile()
    );
  } catch {
    return false;
  }
}

export const templateDir = (buildId: string) => join(tmpdir(), `payloads-firefox-profile-${process.getuid?.() ?? 0}-${buildId}`);

const made = new Map<string, Promise<string | null>>();

/**
 * The template's folder for the Firefox at `executable`, made first if there is none (with
 * `launchBlank`, which starts that Firefox on the given profile folder): null when there is no
 * usable template (no build id, a folder that is not ours, a launch that failed).
 */
export function profileTemplate(executable: string, launchBlank: (userDataDir: string) => Promise<Browser>): Promise<string | null> {
  const build = firefoxBuildId(executable);
  if (!build) return Promise.resolve(null);
  const dir = templateDir(build);
  if (trustedTemplate(dir)) return Promise.resolve(dir);
  // the name taken by anything else (another user's, wrong permissions): fresh profiles, no new try
  if (existsSync(dir) || isLink(dir)) return Promise.resolve(null);
  let p = made.get(dir);
  if (!p) {
    p = makeTemplate(dir, launchBlank).catch(() => null);
    made.set(dir, p);
    void p.then((r) => {
      if (!r) made.delete(dir);
    }); // a failure is tried again at the next launch
  }
  return p;
}

async function makeTemplate(dir: string, launchBlank: (userDataDir: string) => Promise<Browser>): Promise<string | null> {
  // mkdtemp makes the folder 0700
  const fresh = mkdtempSync(join(tmpdir(), 'payloads-firefox-profile-new-'));
  try {
    const browser = await launchBlank(fresh);
    await browser.close();
    for (const name of NOT_IN_TEMPLATE) rmSync(join(fresh, name), { recursive: true, force: true });
    try {
      renameSync(fresh, dir);
    } catch {
      // another process put its template there first (or the name is taken by something else)
      rmSync(fresh, { recursive: true, force: true });
    }
    return trustedTemplate(dir) ? dir : null;
  } catch (e) {
    rmSync(fresh, { recursive: true, force: true });
    throw e;
  }
}

const COPY_PREFIX = 'payloads-firefox-profile-use-';

/**
 * Removes the copies a killed pool left behind (each ~36 MB): ours, and either locked by a Firefox
 * that is gone (Firefox's `lock` names its pid) or unlocked and older than ten minutes.
 */
export function removeLeftCopies(now = Date.now()): number {
  let removed = 0;
  let names: string[] = [];
  try {
    names = readdirSync(tmpdir()).filter((n) => n.startsWith(COPY_PREFIX));
  } catch {
    return 0;
  }
  for (const name of names) {
    const dir = join(tmpdir(), name);
    try {
      const st = lstatSync(dir);
      if (!st.isDirectory() || st.uid !== process.getuid?.()) continue;
      let gone: boolean;
      try {
        const pid = Number(/\+(\d+)$/.exec(readlinkSync(join(dir, 'lock')))?.[1]);
        gone = !pid || !processAlive(pid);
      } catch {
        gone = now - st.mtimeMs > 10 * 60_000; // no lock: a Firefox that never started, or one starting now
      }
      if (gone) {
        rmSync(dir, { recursive: true, force: true });
        removed++;
      }
    } catch {
      /* gone meanwhile */
    }
  }
  return removed;
}

let swept = false;

/** A private copy of `template` for one launch; remove it with `rmSync(copy, { recursive: true })` once that Firefox has exited. */
export function profileCopy(template: string): string {
  if (!swept) {
    swept = true;
    removeLeftCopies();
  }
  const copy = mkdtempSync(join(tmpdir(), COPY_PREFIX));
  try {
    cpSync(template, copy, { recursive: true });
    return copy;
  } catch (e) {
    rmSync(copy, { recursive: true, force: true });
    throw e;
  }
}
