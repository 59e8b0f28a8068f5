// The embedded default: one command runs everything on one machine. Starts a local nats-server
// with JetStream (unless NATS_URL is set), every actor and the gateway, in this process.
import { join } from 'node:path';
import { startNatsServer, type NatsServerHandle } from './shared/nats/server.ts';
import { connectNats, type NatsConnection } from './shared/nats/connect.ts';
import { provision } from './shared/nats/provision.ts';
import { createLogger } from './shared/log.ts';
import { ACTOR_NAMES, type ActorHandle } from './shared/actor.ts';
import { ACTORS } from './actors/index.ts';
import { startGateway } from './gateway/index.ts';
import { loadConfigOrExit, rememberNatsUrl, newInstanceId, onShutdown, onProcessExit, runStopSteps, withRetry, type StopStep } from './shared/runtime.ts';

const config = loadConfigOrExit();
const log = createLogger('main', config.server.logLevel);

let server: NatsServerHandle | undefined;
let url = config.nats.url;
if (!url) {
  // its own process group: Ctrl-C reaches only this process, which stops the server last
  server = await startNatsServer({ storeDir: join(config.dataDir, 'nats'), port: config.nats.embeddedPort, serverName: 'payloads-embedded', ownProcessGroup: true });
  const proc = server.process;
  onProcessExit(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); });
  url = server.url;
  rememberNatsUrl(config, url);
  log.info({ url, store: server.storeDir }, 'embedded nats-server started');
}

const conns: NatsConnection[] = [];
const handles: { name: string; handle: ActorHandle }[] = [];
const stopOf = (names: string[]) => () => Promise.all(handles.filter((h) => names.includes(h.name)).map(({ name, handle }) =>
  handle.stop().catch((e) => log.error({ err: e, name }, 'stop failed'))));
// Order and deadlines (8.5 s in all, under onShutdown's 9 s): first no new requests, then the
// workers (their tasks are redelivered if cut short), then money and jobs, then NATS itself.
const stopAll = () => runStopSteps([
  { what: 'gateway', deadlineMs: 1500, run: stopOf(['gateway']) },
  { what: 'workers', deadlineMs: 2500, run: stopOf(['converter', 'browser-pool', 'relay-prober']) },
  { what: 'wallet and job-supervisor', deadlineMs: 1500, run: stopOf(['wallet', 'job-supervisor']) },
  { what: 'NATS connections', deadlineMs: 1000, run: () => Promise.all(conns.map((c) => c.drain().catch(() => c.close()))) },
  ...(server ? [{ what: 'nats-server', deadlineMs: 2000, run: () => server!.stop('SIGTERM', 1500) } satisfies StopStep] : []),
], log);
onShutdown(stopAll);

try {
  const admin = await connectNats(url, 'main', config.nats.credsFile);
  conns.push(admin);
  await withRetry('provisioning', () => provision(admin, config), { log });
  for (const name of ACTOR_NAMES) {
    const nc = await connectNats(url, name, config.nats.credsFile);
    conns.push(nc);
    const { start } = await ACTORS[name]();
    handles.push({ name, handle: await start({ nc, config, log: log.child({ actor: name }), instanceId: newInstanceId(name) }) });
  }
  const gnc = await connectNats(url, 'gateway', config.nats.credsFile);
  conns.push(gnc);
  const gw = await startGateway({ nc: gnc, config, log: log.child({ actor: 'gateway' }), instanceId: newInstanceId('gateway') });
  handles.push({ name: 'gateway', handle: gw });
  console.log(`\nPayloads is running.\n  API:      ${gw.url}/v1\n  Account:  ${gw.accountUrl}\n  Errors:   ${gw.docsUrl}\n  OpenAPI:  ${gw.url}/openapi.json\n  NATS:     ${url}${server ? ' (embedded, data in ' + config.dataDir + ')' : ''}\nCtrl-C stops everything.\n`);
} catch (e) {
  log.error({ err: e }, 'start failed');
  await stopAll();
  process.exit(1);
}
