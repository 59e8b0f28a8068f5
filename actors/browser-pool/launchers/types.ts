// The launcher contract (Moleculer style: a base contract here, one file per implementation,
// chosen by name from config through registry.ts). A launcher knows how to start one browser
// binary; the pool decides when.
import type { Browser } from 'puppeteer-core';

export type Scheme = 'light' | 'dark';

/** One browser's network namespace, made before its launch (../netns.ts). */
export interface NetnsJail {
  /** `host:port` of the guard proxy as the browser inside sees it. */
  proxy: string;
  /** puppeteer launch options that start `executablePath` inside the namespace. */
  wrap(executablePath: string): { executablePath: string; env: NodeJS.ProcessEnv };
  /** A free port outside that leads to the same port inside (Firefox's BiDi WebSocket). */
  forwardInto(): Promise<number>;
  /** The browser is up: the helper and the forwarding listener are no longer needed. */
  launched(): void;
  /** The browser is gone (or never started): close everything of this namespace. */
  close(): void;
}

export interface LaunchOptions {
  /** Forward proxy every request of the browser must go through (`host:port`). */
  proxy?: string;
  /**
   * Colour scheme the whole browser runs in. Only asked of launchers with `schemePerBrowser`
   * (Firefox: WebDriver BiDi has no per-page prefers-color-scheme emulation, so it is a pref).
   */
  scheme?: Scheme;
  /** The pool's: a fresh network namespace for each launch (netns.ts); ManagedBrowser turns it into `jail`. */
  isolate?: () => Promise<NetnsJail>;
  /** The namespace this launch starts in; `proxy` is then the proxy's address inside it. */
  jail?: NetnsJail;
  /** Script heap of one page (MB), `config.shots.pageHeapMb`; PAGE_HEAP_MB when not given. */
  pageHeapMb?: number;
}

/** puppeteer's executablePath (and env) for `exe`: started inside the launch's namespace, if it has one. */
export function jailed(opts: LaunchOptions, exe: string): { executablePath: string; env?: NodeJS.ProcessEnv } {
  return opts.jail ? opts.jail.wrap(exe) : { executablePath: exe };
}

/** Phone emulation of a `mobile` launcher: applied to every page; request viewports do not apply. */
export interface MobileProfile {
  w: number;
  h: number;
  deviceScaleFactor: number;
  /** `{version}` is replaced by the browser's real major version. */
  userAgent: string;
}

export interface Launcher {
  /** Config id (`config.shots.browsers`), e.g. `chromium-143`. */
  configId: string;
  /** Browser id offered to customers; launchers of several versions share it (`chromium`). */
  browserId: string;
  name: string;
  engine: 'chromium' | 'gecko';
  mobile?: MobileProfile;
  /** true: dark and light pages need separate browser processes (see LaunchOptions.scheme). */
  schemePerBrowser?: boolean;
  /** Chromium only: can print PDFs for websitepro. */
  canPrint?: boolean;
  launch(opts: LaunchOptions): Promise<Browser>;
}

/** Major version out of `browser.version()`: `HeadlessChrome/143.0.7499.0`, `firefox/153.7.0esr`. */
export function majorVersion(versionString: string): string {
  const m = /(\d+)\.\d+/.exec(versionString);
  if (!m) throw new Error(`cannot read a version from ${JSON.stringify(versionString)}`);
  return m[1]!;
}

/** Script heap of one page (MB) by default (`config.shots.pageHeapMb`): a page that allocates without end dies at this size, not the machine. */
export const PAGE_HEAP_MB = 1024;

/**
 * Flags every Chromium gets: headless, no sandbox (container), nothing phoning home, a script
 * heap limit per renderer. Puppeteer's default `--disable-popup-blocking` is removed by the
 * launchers (CHROMIUM_IGNORED_DEFAULTS): with the browser's own blocker a page cannot open
 * windows without a user gesture, and we never give one. The script heap limit per renderer is
 * `chromiumHeapFlag` (per launch: it is configurable).
 */
export const CHROMIUM_BASE_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
  '--disable-dev-shm-usage',
  '--hide-scrollbars',
  '--mute-audio',
  '--disable-extensions',
  '--disable-default-apps',
  '--metrics-recording-only',
  '--password-store=basic',
  '--use-mock-keychain',
  // no name lookups ahead of a request (<link rel=dns-prefetch>, hovered links): they would go to
  // the host's resolver, not through the guard proxy
  '--dns-prefetch-disable',
  // Chromium 15x preloads its omnibox popup (two chrome:// WebUI pages in a renderer of their own)
  // for every new browser context, i.e. every task: measured on 156, a second renderer process per
  // page, 300 ms more CPU and 130 MB more RSS per shot, for a window a headless browser never
  // shows. Unknown names are ignored by majors that do not have them. Puppeteer merges this list
  // with its own --disable-features.
  '--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup',
];

/**
 * Puppeteer's default flags we do not take. `--disable-popup-blocking`: pages may not open windows.
 * `--disable-ipc-flooding-protection`: without Chromium's own limit (200 history changes or
 * renderer-started navigations in 10 s, the rest ignored) a page calling `pushState` every 5 ms
 * kept the browser process so busy that a question to the page took 2.8 s on a quiet machine
 * and more than the 3 s stuck limit under load (the phone's `/pushstate` failures, session 22).
 */
export const CHROMIUM_IGNORED_DEFAULTS = ['--disable-popup-blocking', '--disable-ipc-flooding-protection'];

/** V8's old-space limit of every renderer of this launch: a page past it ends its renderer. */
export function chromiumHeapFlag(opts: LaunchOptions): string {
  return `--js-flags=--max-old-space-size=${opts.pageHeapMb ?? PAGE_HEAP_MB}`;
}

/**
 * Proxy flags: every request through the guard proxy, loopback included (`<-loopback>` removes
 * Chromium's implicit bypass of localhost), no QUIC (it would not go through an HTTP proxy), and
 * WebRTC kept off UDP that does not go through the proxy: without this a page's STUN and TURN
 * packets, and ICE checks to any candidate it names, go straight out (issue 27). The policy's
 * switch was `--force-webrtc-ip-handling-policy` until Chromium ~13x and `--webrtc-ip-handling-policy`
 * since; each major ignores the name it does not know. With the policy WebRTC may only use TURN
 * over TCP through the proxy, which the guard checks like any CONNECT. These flags are the first
 * layer; the network namespace (netns.ts) is the one that holds whatever a page finds.
 */
export function chromiumProxyFlags(proxy: string | undefined): string[] {
  if (!proxy) return [];
  return [
    `--proxy-server=http://${proxy}`,
    '--proxy-bypass-list=<-loopback>',
    '--disable-quic',
    '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
    '--webrtc-ip-handling-policy=disable_non_proxied_udp',
  ];
}
