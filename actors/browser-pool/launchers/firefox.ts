// Firefox ESR from Debian through puppeteer-core's WebDriver BiDi. BiDi has no per-page
// prefers-color-scheme emulation (puppeteer's emulateMediaFeatures is CDP-only), so the scheme is
// the content-override pref and the pool keeps one Firefox per scheme it has been asked for.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from './puppeteer.ts';
import { PAGE_HEAP_MB, jailed, type Launcher, type LaunchOptions } from './types.ts';
import { profileCopy, profileTemplate } from './firefox-profile.ts';

export const DEBIAN_FIREFOX = process.env.FIREFOX_PATH || '/usr/bin/firefox-esr';

/**
 * Firefox talks BiDi over a WebSocket, so unlike Chromium over a pipe it would outlive a pool
 * process killed with SIGKILL. Started through `setpriv --pdeathsig KILL` it dies with its parent.
 */
export function firefoxExecutable(): string {
  if (!existsSync('/usr/bin/setpriv')) return DEBIAN_FIREFOX;
  const wrapper = join(tmpdir(), `payloads-firefox-${process.getuid?.() ?? 0}.sh`);
  const script = `#!/bin/sh\nexec /usr/bin/setpriv --pdeathsig KILL ${JSON.stringify(DEBIAN_FIREFOX)} "$@"\n`;
  if (!existsSync(wrapper) || readFileSync(wrapper, 'utf8') !== script) {
    // written aside and renamed: another process may be starting Firefox through it right now
    const tmp = `${wrapper}.${process.pid}`;
    writeFileSync(tmp, script, { mode: 0o755 });
    renameSync(tmp, wrapper);
  }
  return wrapper;
}

export function firefoxPrefs(opts: LaunchOptions): Record<string, unknown> {
  const prefs: Record<string, unknown> = {
    // 0 dark, 1 light: what prefers-color-scheme answers in every page of this browser
    'layout.css.prefers-color-scheme.content-override': opts.scheme === 'dark' ? 0 : 1,
    // the first layer of issue 27 (the namespace is the second): nothing that leaves beside the
    // proxy. No HTTP/3 or
    // WebTransport (QUIC is UDP, which an HTTP proxy does not carry), no pings, no captive-portal
    // or connectivity probes, no speculative connections or name lookups
    // WebRTC stays on: with a proxy set, Firefox's ICE goes only through it
    // (media.peerconnection.ice.proxy_only_if_behind_proxy, default true; the egress test saw no
    // packet from Firefox even before this list). Turning it off made a pushState loop's settle
    // slower than its bound in test/shots/redirects (session 16).
    'network.http.http3.enable': false,
    'network.webtransport.enabled': false,
    'browser.send_pings': false,
    'network.captive-portal-service.enabled': false,
    'network.connectivity-service.enabled': false,
    'network.predictor.enabled': false,
    'network.dns.disablePrefetchFromHTTPS': true,
    // overlay scrollbars take no layout space: a page is as wide as the viewport, as in Chromium
    'ui.useOverlayScrollbars': 1,
    'widget.gtk.overlay-scrollbars.enabled': true,
    'network.dns.disablePrefetch': true,
    'network.prefetch-next': false,
    'network.http.speculative-parallel-limit': 0,
    'network.trr.mode': 5,
    'browser.safebrowsing.malware.enabled': false,
    'browser.safebrowsing.phishing.enabled': false,
    // puppeteer allows windows opened while a page loads; a real Firefox blocks them
    'dom.disable_open_during_load': true,
    // script heap per page (MB): a page allocating without end gets out-of-memory errors
    'javascript.options.mem.max': opts.pageHeapMb ?? PAGE_HEAP_MB,
    // history.pushState/replaceState (and location changes) past 50 in 10 s throw a SecurityError,
    // as Chromium does past 200. Each one costs Firefox's parent process: a page pushing state in
    // a loop kept it so busy that our own questions to the page waited 5-20 s (and the page was
    // failed as stuck) on a loaded machine; at 100 in 10 s it still fell behind, at 50 it did not
    // (session 18, docs/shots.md "Hostile pages")
    'dom.navigation.navigationRateLimit.count': 50,
    'dom.navigation.navigationRateLimit.timespan': 10,
  };
  if (opts.proxy) {
    const i = opts.proxy.lastIndexOf(':');
    const host = opts.proxy.slice(0, i);
    const port = Number(opts.proxy.slice(i + 1));
    Object.assign(prefs, {
      'network.proxy.type': 1, // manual
      'network.proxy.http': host,
      'network.proxy.http_port': port,
      'network.proxy.ssl': host,
      'network.proxy.ssl_port': port,
      'network.proxy.share_proxy_settings': true,
      'network.proxy.socks': '',
      'network.proxy.socks_remote_dns': true,
      // nothing bypasses the proxy, localhost included
      'network.proxy.no_proxies_on': '',
      'network.proxy.allow_hijacking_localhost': true,
      'network.proxy.failover_direct': false,
    });
  }
  return prefs;
}

export function firefox(configId = 'firefox'): Launcher {
  return {
    configId,
    browserId: 'firefox',
    name: 'Firefox ESR',
    engine: 'gecko',
    schemePerBrowser: true,
    launch: async (opts) => {
      const start = async (userDataDir?: string) =>
        puppeteer.launch({
          browser: 'firefox',
          ...jailed(opts, firefoxExecutable()),
          // in a namespace BiDi's WebSocket listens inside it: a port outside leads to the same port inside
          ...(opts.jail ? { debuggingPort: await opts.jail.forwardInto() } : {}),
          headless: true,
          extraPrefsFirefox: firefoxPrefs(opts),
          defaultViewport: null,
          handleSIGINT: false,
          handleSIGTERM: false,
          handleSIGHUP: false,
          ...(userDataDir ? { userDataDir } : {}),
        });
      // a copy of the build's profile template (launchers/firefox-profile.ts; made with this same
      // launch, in the same namespace and behind the same proxy); without one, a new profile
      const template = await profileTemplate(DEBIAN_FIREFOX, start);
      let copy: string | undefined;
      try {
        copy = template ? profileCopy(template) : undefined;
      } catch {
        copy = undefined;
      }
      if (!copy) return start();
      const drop = () => rmSync(copy, { recursive: true, force: true });
      try {
        const browser = await start(copy);
        const proc = browser.process();
        if (!proc || proc.exitCode !== null || proc.signalCode !== null) drop();
        else proc.once('exit', drop);
        return browser;
      } catch (e) {
        drop();
        throw e;
      }
    },
  };
}
