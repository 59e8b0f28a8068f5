// Run one actor (or the gateway) in its own process: `node --import tsx actors/run.ts <name>`.
// Used by the Procfile and the cluster command; NATS_URL names the servers.
import { ACTORS } from './index.ts';
import { ACTOR_NAMES, type ActorName } from '../shared/actor.ts';
import { connectNats } from '../shared/nats/connect.ts';
import { provision } from '../shared/nats/provision.ts';
import { createLogger } from '../shared/log.ts';
import { loadConfigOrExit, resolveNatsUrl, newInstanceId, onShutdown, runStopSteps, withRetry } from '../shared/runtime.ts';
import { startGateway } from '../gateway/index.ts';

const name = process.argv[2] ?? '';
if (name !== 'gateway' && !(ACTOR_NAMES as readonly string[]).includes(name)) {
  console.error(`usage: actors/run.ts <${['gateway', ...ACTOR_NAMES].join('|')}>`);
  process.exit(2);
}
const config = loadConfigOrExit();
const log = createLogger(name, config.server.logLevel);
const nc = await connectNats(resolveNatsUrl(config), name, config.nats.credsFile);
await withRetry('provisioning', () => provision(nc, config), { log });
const instanceId = newInstanceId(name);
let handle: { stop(): Promise<void> };
if (name === 'gateway') {
  const gw = await startGateway({ nc, config, log, instanceId });
  console.log(`gateway: ${gw.url}`);
  handle = gw;
} else {
  handle = await (await ACTORS[name as ActorName]()).start({ nc, config, log, instanceId });
}
log.info({ instanceId }, `${name} started`);
process.send?.({ ready: name, instanceId });
// each step bounded (7 s in all, under onShutdown's 9 s): with its NATS node gone a stop would wait for ever
onShutdown(() => runStopSteps([
  { what: name, deadlineMs: 5500, run: () => handle.stop() },
  { what: 'NATS connection', deadlineMs: 1500, run: () => nc.drain().catch(() => nc.close()) },
], log));
