// Older Chromium majors from the @sparticuz/chromium npm packages (installed as aliases
// `chromium-<major>`). Each ships a brotli-compressed headless-shell binary that its
// executablePath() unpacks into os.tmpdir(); every package unpacks to the same `/tmp/chromium`,
// so we point TMPDIR at a folder per major for the (synchronous) start of the call, unpack into a
// scratch folder and rename it into place, so a crash halfway never leaves a truncated binary that
// a later start would take as complete.
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from './puppeteer.ts';
import { CHROMIUM_BASE_FLAGS, CHROMIUM_IGNORED_DEFAULTS, chromiumHeapFlag, chromiumProxyFlags, jailed, type Launcher } from './types.ts';

interface SparticuzModule {
  args: string[];
  executablePath(input?: string): Promise<string>;
}

/**
 * Their recommended flags minus the ones that are wrong here: `--single-process` crashes on the
 * first new browser context (it is for AWS Lambda's prctl limits), `--disable-web-security` and
 * `--allow-running-insecure-content` would switch off the same-origin policy, the SwiftShader GL
 * flags are replaced by `--disable-gpu`, headless mode is set by puppeteer, and Chromium's limit on
 * history floods stays on (`CHROMIUM_IGNORED_DEFAULTS`).
 */
const DROPPED = [
  '--single-process',
  '--disable-ipc-flooding-protection',
  '--disable-web-security',
  '--allow-running-insecure-content',
  '--headless',
  '--use-gl',
  '--use-angle',
  '--enable-unsafe-swiftshader',
  '--ignore-gpu-blocklist',
  '--in-process-gpu',
  '--enable-features=SharedArrayBuffer',
];
export const sparticuzFlags = (args: string[]) => args.filter((a) => !DROPPED.some((d) => a === d || a.startsWith(`${d}=`)));

/**
 * The headless shell has no popup blocker (it lives in Chrome's UI layer, which the shell leaves
 * out): every `window.open` opened a window, and one whose script raised a dialog at once froze
 * the opener (same renderer) until the page timeout, intermittently, as the dialog won or lost
 * the race with puppeteer's set-up of the popup. This shell switch refuses every new window,
 * which is what Chromium's blocker does to a page that had no user gesture (we never give one).
 */
export const HEADLESS_SHELL_FLAGS = ['--block-new-web-contents'];

const unpacked = new Map<string, Promise<string>>();

async function unpack(pkg: string, mod: SparticuzModule): Promise<string> {
  const base = join(process.env.PAYLOADS_BROWSER_CACHE || tmpdir(), `payloads-${pkg}`);
  const exe = join(base, 'chromium');
  if (existsSync(exe)) return exe;
  const scratch = `${base}.partial-${process.pid}-${Date.now()}`;
  mkdirSync(scratch, { recursive: true });
  const prev = process.env.TMPDIR;
  process.env.TMPDIR = scratch;
  let pending: Promise<string>;
  try {
    pending = mod.executablePath(); // reads tmpdir() synchronously before its first await
  } finally {
    if (prev === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = prev;
  }
  await pending;
  try {
    renameSync(scratch, base);
  } catch {
    // another process finished first: use its copy
    rmSync(scratch, { recursive: true, force: true });
  }
  if (!existsSync(exe)) throw new Error(`${pkg}: unpacking did not produce ${exe}`);
  return exe;
}

export function sparticuzChromium(configId: string): Launcher {
  const pkg = configId; // config id `chromium-143` is the npm alias of @sparticuz/chromium@143
  let mod: SparticuzModule | undefined;
  const load = async () => (mod ??= ((await import(pkg)) as { default: SparticuzModule }).default);
  return {
    configId,
    browserId: 'chromium',
    name: 'Chromium',
    engine: 'chromium',
    canPrint: true,
    async launch(opts) {
      const m = await load();
      let p = unpacked.get(pkg);
      if (!p) {
        p = unpack(pkg, m);
        unpacked.set(pkg, p);
        p.catch(() => unpacked.delete(pkg));
      }
      const executablePath = await p;
      return puppeteer.launch({
        ...jailed(opts, executablePath),
        headless: 'shell',
        args: [
          ...new Set([
            ...sparticuzFlags(m.args),
            ...HEADLESS_SHELL_FLAGS,
            ...CHROMIUM_BASE_FLAGS,
            chromiumHeapFlag(opts),
            ...chromiumProxyFlags(opts.proxy),
          ]),
        ],
        defaultViewport: null,
        ignoreDefaultArgs: CHROMIUM_IGNORED_DEFAULTS,
        // over a pipe Chromium exits by itself when this process dies, even by SIGKILL: no orphans
        pipe: true,
        handleSIGINT: false,
        handleSIGTERM: false,
        handleSIGHUP: false,
      });
    },
  };
}
