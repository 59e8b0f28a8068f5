// Every NATS micro service and its declared endpoints, for the generated docs and their test.
import type { ServiceApi } from './endpoint.ts';
import { WALLET_API } from './wallet.ts';
import { JOB_SUPERVISOR_API } from './job-supervisor.ts';
import { BROWSER_POOL_API } from './browser-pool.ts';

export const SERVICE_APIS: readonly ServiceApi[] = [WALLET_API, JOB_SUPERVISOR_API, BROWSER_POOL_API];
