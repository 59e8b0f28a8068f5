// Child of bench/wallet-history.ts: starts the wallet actor alone against NATS_URL with DATA_DIR,
// logging JSON lines to stdout (the parent reads 'bench: starting', 'wallet started' and 'ledger
// projection caught up' and samples this process's RSS). Runs until killed.
import { start } from '../../actors/wallet/index.ts';
import { loadConfig } from '../../shared/config/index.ts';
import { connectNats } from '../../shared/nats/connect.ts';
import { createLogger } from '../../shared/log.ts';

const url = process.env.NATS_URL!;
const config = loadConfig({
  env: {},
  noDefaultFile: true,
  overrides: { dataDir: process.env.DATA_DIR!, nats: { url }, wallet: { orphanChargeGraceSeconds: 7 * 86400 } },
});
const log = createLogger('bench-wallet', 'info');
const nc = await connectNats(url, 'bench-wallet');
log.info('bench: starting');
try {
  await start({ nc, config, log, instanceId: 'wallet-bench' });
} catch (e) {
  log.error({ err: (e as Error).message }, 'bench: start failed');
}
setInterval(() => {}, 1 << 30);
