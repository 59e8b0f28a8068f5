// Config id → launcher. `chromium` is Debian's, `chromium-<major>` an @sparticuz/chromium alias
// package, `firefox` Debian's Firefox ESR, `mobile` Debian's Chromium emulating a phone.
import { debianChromium } from './debian-chromium.ts';
import { sparticuzChromium } from './sparticuz-chromium.ts';
import { firefox } from './firefox.ts';
import { mobile } from './mobile.ts';
import type { Launcher } from './types.ts';

const FIXED: Record<string, (configId: string) => Launcher> = {
  chromium: debianChromium,
  firefox,
  mobile,
};

export function launcherFor(configId: string): Launcher {
  const fixed = FIXED[configId];
  if (fixed) return fixed(configId);
  if (/^chromium-\d+$/.test(configId)) return sparticuzChromium(configId);
  throw new Error(`unknown browser launcher ${JSON.stringify(configId)} (known: ${Object.keys(FIXED).join(', ')}, chromium-<major>)`);
}

export type { Launcher } from './types.ts';
