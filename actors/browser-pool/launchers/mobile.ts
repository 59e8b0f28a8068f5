// A current phone, emulated by Debian's Chromium: Pixel 8 screen (412x915 CSS px at DPR 2.625),
// Android Chrome user agent with the real version, touch, mobile viewport meta handling.
import type { Launcher, MobileProfile } from './types.ts';
import { debianChromium } from './debian-chromium.ts';

export const PHONE: MobileProfile = {
  w: 412,
  h: 915,
  deviceScaleFactor: 2.625,
  userAgent: 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{version}.0.0.0 Mobile Safari/537.36',
};

export function mobile(configId = 'mobile'): Launcher {
  const base = debianChromium(configId);
  return { ...base, browserId: 'mobile', name: 'Chromium on a phone (Pixel 8 emulation)', mobile: PHONE, canPrint: false };
}
