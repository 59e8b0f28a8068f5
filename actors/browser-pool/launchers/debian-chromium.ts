// Chromium from Debian (/usr/bin/chromium): the newest Chromium on the machine.
import puppeteer from './puppeteer.ts';
import { CHROMIUM_BASE_FLAGS, CHROMIUM_IGNORED_DEFAULTS, chromiumHeapFlag, chromiumProxyFlags, jailed, type Launcher } from './types.ts';

export const DEBIAN_CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

export function debianChromium(configId = 'chromium'): Launcher {
  return {
    configId,
    browserId: 'chromium',
    name: 'Chromium',
    engine: 'chromium',
    canPrint: true,
    launch: (opts) =>
      puppeteer.launch({
        ...jailed(opts, DEBIAN_CHROMIUM),
        headless: true,
        args: [...CHROMIUM_BASE_FLAGS, chromiumHeapFlag(opts), ...chromiumProxyFlags(opts.proxy)],
        defaultViewport: null,
        ignoreDefaultArgs: CHROMIUM_IGNORED_DEFAULTS,
        // over a pipe Chromium exits by itself when this process dies, even by SIGKILL: no orphans
        pipe: true,
        handleSIGINT: false,
        handleSIGTERM: false,
        handleSIGHUP: false,
      }),
  };
}
