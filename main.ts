// The one launcher: `node --import tsx main.ts [name ...]` runs the named units (actors and the
// gateway, from one registry) in this process. With no name it is the embedded default: every unit,
// and a local nats-server with JetStream unless NATS_URL is set. With names (the Procfile, the
// cluster command) NATS_URL or the embedded server's data folder names the servers, and the process
// reports `{ready: name}` over IPC when started, so a parent knows when it may use it.
import nodeModule from 'node:module';
import { join } from 'node:path';
import { startNatsServer, type NatsServerHandle } from './shared/nats/server.ts';
import { connectNats, type NatsConnection } from './shared/nats/connect.ts';
import { provision } from './shared/nats/provision.ts';
import { dropEphemeralConsumers } from './shared/nats/ephemeral.ts';
import { createLogger } from './shared/log.ts';
import { ACTOR_NAMES, type ActorHandle, type ActorName, type ActorStart } from './shared/actor.ts';
import { ACTORS, startUnitThread } from './actors/index.ts';
import type { GatewayHandle } from './gateway/index.ts';
import {
  loadConfigOrExit,
  rememberNatsUrl,
  resolveNatsUrl,
  newInstanceId,
  onShutdown,
  onProcessExit,
  runStopSteps,
  within,
  withRetry,
  type StopStep,
} from './shared/runtime.ts';
import { deprecatedSettings } from './shared/config/index.ts';

/** Every runnable unit, in start order: the gateway last, so it opens its port once the actors answer. */
// The project's Node is node_modules/.bin/node (package.json's node-linux-<arch>, 22): npm scripts and
// npx find it first. An older Node started by hand (the machine's) would crash in better-sqlite3's
// prebuild (a segfault on 20) or miss uWS's build: say what to run instead. Node runs the TypeScript
// itself (type stripping, on by default from 22.18); under an older Node started with tsx this says why.
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(
    `payloads needs Node >= 22.18; this is ${process.version} (${process.execPath}). Start it through npm (npm start, npm run actor -- <name>), npx (npx node main.ts) or node_modules/.bin/node, the project's Node.`,
  );
  process.exit(1);
}
// The units below are imported at launch (see `loading`): V8's compiled code of them and their libraries is kept
// on disk (os.tmpdir()/node-compile-cache, or NODE_COMPILE_CACHE; NODE_DISABLE_COMPILE_CACHE=1 turns
// it off), so a restart compiles none of it again: 0.3-0.4 s less CPU per process start, measured
// on the browser-pool and gateway imports (session 18, docs/notes/issue-30.md).
nodeModule.enableCompileCache?.(); // a named import would fail to link on an old Node, before the check above could say why

const UNITS: Record<string, () => Promise<{ start: ActorStart }>> = {
  ...ACTORS,
  gateway: () => import('./gateway/index.ts').then((m) => ({ start: m.startGateway })),
};
const UNIT_NAMES = [...ACTOR_NAMES, 'gateway'];

const asked = process.argv.slice(2);
const unknown = asked.filter((n) => !UNIT_NAMES.includes(n));
if (unknown.length) {
  console.error(`unknown unit ${unknown.join(', ')}; usage: main.ts [${UNIT_NAMES.join('|')} ...] (none: all)`);
  process.exit(2);
}
const everything = asked.length === 0;
const names = everything ? UNIT_NAMES : UNIT_NAMES.filter((n) => asked.includes(n));

const config = loadConfigOrExit();
const log = createLogger(names.length === 1 ? names[0]! : 'main', config.server.logLevel);
for (const d of deprecatedSettings(config)) log.warn(`config: deprecated setting ${d}`);

// The units' code is loaded while the embedded nats-server loads its store (its own process, the
// other core): a store of 1 M job documents took 2.9 s longer to load than an empty one, which the
// imports (the same on every start) now mostly cover. Awaited, errors included, in the loop below.
// Units on threads of their own (server.unitThreads, actors/unit-threads.ts) load their code there.
const threaded = (n: string): n is ActorName => names.length > 1 && (config.server.unitThreads as string[]).includes(n);
const loading = new Map(names.filter((n) => !threaded(n)).map((n) => [n, UNITS[n]!()] as const));
for (const p of loading.values()) p.catch(() => {}); // reported when awaited, not as unhandled

let server: NatsServerHandle | undefined;
let url: string;
if (everything && !config.nats.url) {
  // its own process group: Ctrl-C reaches only this process, which stops the server last
  // after an unclean stop it rebuilds the state of the streams written last, in time that grows
  // with the store: say so every 10 s instead of giving up (shared/nats/server.ts START_TIMEOUT_MS)
  server = await startNatsServer({
    storeDir: join(config.dataDir, 'nats'),
    port: config.nats.embeddedPort,
    serverName: 'payloads-embedded',
    syncInterval: config.nats.syncInterval,
    ownProcessGroup: true,
    onSlowStart: (ms, lastLine) =>
      log.info(
        { seconds: Math.round(ms / 1000), lastLine },
        "embedded nats-server still starting (after an unclean stop it rebuilds its streams' state first)",
      ),
  });
  const proc = server.process;
  onProcessExit(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  url = server.url;
  rememberNatsUrl(config, url);
  log.info({ url, store: server.storeDir }, 'embedded nats-server started');
} else {
  url = resolveNatsUrl(config);
}

const conns: NatsConnection[] = [];
const handles: { name: string; handle: ActorHandle; instanceId: string }[] = [];
const stopOf = (units: string[]) => () =>
  Promise.all(
    handles
      .filter((h) => units.includes(h.name))
      .map(({ name, handle }) => {
        const t0 = performance.now();
        return handle.stop().then(
          () => log.info({ name, ms: Math.round(performance.now() - t0) }, 'unit stopped'),
          (e) => log.error({ err: e, name }, 'stop failed'),
        );
      }),
  );
// Order and deadlines (8.5 s in all, under onShutdown's 9 s): first no new requests, then the
// workers (their tasks are redelivered if cut short), then money and jobs, then NATS itself. A
// step past its deadline is left behind: with NATS gone first (systemd signals every process of
// the service) drains and consumer stops would otherwise wait for ever. One unit alone (the
// cluster's processes) gets the units' whole share.
const unitSteps: StopStep[] =
  names.length === 1
    ? [{ what: names[0]!, deadlineMs: 5500, run: stopOf(names) }]
    : [
        { what: 'gateway', deadlineMs: 1500, run: stopOf(['gateway']) },
        { what: 'workers', deadlineMs: 2500, run: stopOf(['converter', 'browser-pool', 'relay-prober']) },
        { what: 'wallet and job-supervisor', deadlineMs: 1500, run: stopOf(['wallet', 'job-supervisor']) },
      ];
const stopAll = () =>
  runStopSteps(
    [
      ...unitSteps,
      {
        what: 'NATS connections',
        deadlineMs: 1000,
        run: async () => {
          // the embedded server is this process's alone: drop the KV watches and ordered reads the units
          // left, which its next start would otherwise restore and count (as the cluster launcher does:
          // shared/nats/ephemeral.ts); bounded, so the drain keeps most of the step
          if (server && conns[0])
            await within(
              dropEphemeralConsumers(conns[0]).catch(() => 0),
              400,
              0,
            );
          await Promise.all(conns.map((c) => c.drain().catch(() => c.close())));
        },
      },
      ...(server ? [{ what: 'nats-server', deadlineMs: 2000, run: () => server!.stop('SIGTERM', 1500) }] : []),
    ],
    log,
  );
onShutdown(stopAll);

try {
  for (const name of names) {
    const onThread = threaded(name);
    // the first connection provisions, once, before the first unit: streams, buckets and stores exist before anything uses them
    if (!conns.length || !onThread) {
      const nc = await connectNats(url, onThread ? 'main' : name, config.nats.credsFile, log.child({ nats: onThread ? 'main' : name }));
      conns.push(nc);
      if (conns.length === 1) await withRetry('provisioning', () => provision(nc, config), { log });
    }
    const instanceId = newInstanceId(name);
    const handle = onThread
      ? await startUnitThread({ name, url, config, instanceId, nice: config.server.unitThreadNice }, (e) => {
          log.fatal({ err: e, actor: name }, 'unit thread died');
          process.exit(1);
        })
      : await (await loading.get(name)!).start({
          nc: conns.at(-1)!,
          config,
          log: names.length === 1 ? log : log.child({ actor: name }),
          instanceId,
        });
    handles.push({ name, instanceId, handle });
    log.info({ instanceId, thread: onThread || undefined }, `${name} started`);
  }
  const gw = handles.find((h) => h.name === 'gateway')?.handle as GatewayHandle | undefined;
  // the gateway loaded its uWS build already (runtimeInfo names it); other units need only Node's
  const rt = gw ? (await import('./gateway/uws.ts')).runtimeInfo() : undefined;
  const runtime = `Node ${process.versions.node} (ABI ${process.versions.modules})${rt ? `, ${rt.libc}, uWS ${rt.uws} (${rt.uwsBinary})` : ''}`;
  log.info({ node: process.versions.node, uws: rt?.uws }, `runtime: ${runtime}`);
  if (everything && gw) {
    console.log(
      `\nPayloads is running.\n  Mode:     ${gw.mode.join('\n')}\n  Runtime:  ${runtime}\n  API:      ${gw.url}/v1\n  Account:  ${gw.accountUrl}\n  Errors:   ${gw.docsUrl}\n  OpenAPI:  ${gw.url}/openapi.json (reference: ${gw.url}/docs)\n  NATS:     ${url}${server ? ' (embedded, data in ' + config.dataDir + ')' : ''}\nCtrl-C stops everything.\n`,
    );
  } else if (gw) {
    console.log(`gateway: ${gw.url}`);
  }
  for (const { name, instanceId } of handles) process.send?.({ ready: name, instanceId });
} catch (e) {
  log.error({ err: e }, 'start failed');
  await stopAll();
  process.exit(1);
}
