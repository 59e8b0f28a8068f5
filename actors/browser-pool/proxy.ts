// The outbound guard's forward proxy every browser is forced through (shared/outbound).
import type { Config } from '../../shared/config/index.ts';
import type { Logger } from '../../shared/log.ts';

export interface BrowserProxy {
  /** `host:port` for --proxy-server / Firefox proxy prefs. */
  address: string;
  stop(): Promise<void>;
}

export async function startBrowserProxy(_config: Config, _log: Logger): Promise<BrowserProxy | undefined> {
  return undefined; // wired once shared/outbound's proxy lands
}
