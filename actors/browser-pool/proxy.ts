// The outbound guard's forward proxy (shared/outbound) that every browser of this instance is
// forced through, plus a short memory of what it refused: Chromium reports any refused CONNECT as
// the same ERR_TUNNEL_CONNECTION_FAILED, so "was something blocked while this page loaded" is how
// a blocked redirect is told apart from an unreachable host.
import type { Config } from '../../shared/config/index.ts';
import type { Logger } from '../../shared/log.ts';
import { startGuardProxy } from '../../shared/outbound/index.ts';

export interface BrowserProxy {
  /** `host:port` for --proxy-server and Firefox proxy prefs. */
  address: string;
  /** Whether a connection was refused as blocked_address since `t` (ms). */
  blockedSince(t: number): boolean;
  stop(): Promise<void>;
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
  return {
    address: `127.0.0.1:${proxy.port}`,
    blockedSince: (t) => refusals.some((r) => r >= t),
    stop: () => proxy.stop(),
  };
}
