// A fixed rate from config: development and tests only (refused in production mode by loadConfig).
import type { Config } from '../../../shared/config/index.ts';
import type { RateProvider } from './types.ts';

export function createFixedRate(config: Config): RateProvider {
  const eurPerBtc = config.wallet.rate.fixedEurPerBtc;
  return { name: 'fixed', get: async () => ({ eurPerBtc, source: 'fixed', at: Date.now() }) };
}
