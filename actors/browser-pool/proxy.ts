// The outbound guard's forward proxy (shared/outbound) that every browser of this instance is
// forced through, plus a short memory of what it refused: Chromium reports any refused CONNECT as
// the same ERR_TUNNEL_CONNECTION_FAILED, so "was something blocked while this page loaded" is how
// a blocked redirect is told apart from an unreachable host.
//
// Two layers keep a browser's packets on that path (issue 27, docs/shots.md): launch flags and
// prefs (launchers/), and, where this process can make network namespaces, a namespace per
// browser in which the proxy is the only reachable thing (netns.ts, `outbound.browserNetns`).
import type { Config } from '../../shared/config/index.ts';
import type { Logger } from '../../shared/log.ts';
import { startGuardProxy } from '../../shared/outbound/index.ts';
import { openJail, type NetnsJail } from './netns.ts';

export interface BrowserProxy {
  /** `host:port` for --proxy-server and Firefox proxy prefs (browsers without a namespace). */
  address: string;
  /** A fresh network namespace for the next browser launch; undefined: browsers share the host's network. */
  isolate?: () => Promise<NetnsJail>;
  /** Whether a connection was refused as blocked_address since `t` (ms). */
  blockedSince(t: number): boolean;
  stop(): Promise<void>;
}

export class NetnsUnavailable extends Error {
  constructor(reason: string, production = false) {
    super(
      production
        ? `production mode: browsers would run without a network namespace (outbound.browserNetns is "auto" and this process cannot make one: ${reason}); run as root or allow unprivileged user namespaces, or set outbound.browserNetns to "off" to accept flags and prefs only`
        : `outbound.browserNetns is "required" but this process cannot give browsers a network namespace: ${reason}`,
    );
    this.name = 'NetnsUnavailable';
  }
}

export async function startBrowserProxy(config: Config, log: Logger): Promise<BrowserProxy> {
  const refusals: number[] = [];
  const proxy = await startGuardProxy({
    allowCidrs: config.outbound.allowCidrs,
    port: config.outbound.proxyPort,
    connectTimeoutMs: config.outbound.connectTimeoutMs,
    onBlocked: (e) => {
      if (e.code !== 'blocked_address') return;
      refusals.push(Date.now());
      if (refusals.length > 200) refusals.splice(0, refusals.length - 200);
      log.info({ host: e.host, reason: e.reason }, 'browser request refused by the outbound guard');
    },
  });
  const isolate = () => openJail((s) => proxy.accept(s));
  let usable = false;
  const mode = config.outbound.browserNetns;
  if (mode !== 'off') {
    try {
      // a trial namespace: the mode is decided once, at start, and said in the log
      (await isolate()).close();
      usable = true;
      log.info({ browserNetns: mode }, 'browsers run in network namespaces of their own: the guard proxy is all they can reach');
    } catch (e) {
      // production never falls back silently: without a namespace it needs the operator's explicit `off`
      const production = mode === 'auto' && config.server.mode === 'production';
      if (mode === 'required' || production) {
        await proxy.stop();
        throw new NetnsUnavailable((e as Error).message, production);
      }
      log.error(
        { err: e, browserNetns: mode },
        'BROWSERS ARE NOT NETWORK-ISOLATED: this process cannot make network namespaces (run as root or allow unprivileged user namespaces); only browser flags and prefs keep pages on the guard proxy (docs/shots.md)',
      );
    }
  } else {
    log.warn(
      { browserNetns: mode },
      'outbound.browserNetns is off: only browser flags and prefs keep pages on the guard proxy (docs/shots.md)',
    );
  }
  return {
    address: `127.0.0.1:${proxy.port}`,
    ...(usable ? { isolate } : {}),
    blockedSince: (t) => refusals.some((r) => r >= t),
    stop: () => proxy.stop(),
  };
}
