// The registry of rate providers: config names one (wallet.rate.provider).
import type { Config } from '../../../shared/config/index.ts';
import type { Logger } from '../../../shared/log.ts';
import type { RateProvider } from './types.ts';
import { createFixedRate } from './fixed.ts';
import { createExchangesRate } from './exchanges.ts';

export * from './types.ts';

export const PROVIDERS: Record<string, (config: Config, log: Logger) => RateProvider> = {
  fixed: (config) => createFixedRate(config),
  exchanges: (config, log) => createExchangesRate(config, log),
};

export function createRateProvider(config: Config, log: Logger): RateProvider {
  const make = PROVIDERS[config.wallet.rate.provider];
  if (!make) throw new Error(`unknown rate provider ${config.wallet.rate.provider}; known: ${Object.keys(PROVIDERS).join(', ')}`);
  return make(config, log);
}
