// Operator CLI: `npm run admin -- <subcommand>`. Subcommands live in admin/commands/*.ts.
// Every command works while a majority of the NATS servers is up (reads from stream leaders, steps
// tried again through a failover) and ends within COMMAND_BUDGET_MS; when NATS does not answer it
// says why (no quorum, which servers are down) instead of `timeout`.
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { AdminCommand, AdminContext } from './command.ts';
import { connectNats, type NatsConnection } from '../shared/nats/connect.ts';
import { createLogger } from '../shared/log.ts';
import { loadConfigOrExit, resolveNatsUrl, withRetry } from '../shared/runtime.ts';
import { ApiError } from '../shared/errors.ts';
import { ClusterError, diagnose, isOutage, knownWithoutQuorum, serverUrls } from './cluster.ts';

/**
 * A command's whole time from its start, diagnosis included: with the process's own start it stays
 * under the 15 s an operator (and the node-loss test) allows, and retries through a failover (a
 * new stream leader takes 2 to 5 s) fit inside it.
 */
// 12 s: a failover of the LEDGER leader (a new raft election) can take 5-8 s; the 15 s an operator waits at most includes the diagnosis that follows a budget run out
export const COMMAND_BUDGET_MS = 12_000;

const dir = join(dirname(fileURLToPath(import.meta.url)), 'commands');
const commands: AdminCommand[] = [];
for (const f of readdirSync(dir)
  .filter((f) => f.endsWith('.ts'))
  .sort()) {
  const mod = (await import(pathToFileURL(join(dir, f)).href)) as { commands?: AdminCommand[] };
  commands.push(...(mod.commands ?? []));
}

const argv = process.argv.slice(2);
const cmd = commands.filter((c) => c.name.split(' ').every((w, i) => argv[i] === w)).sort((a, b) => b.name.length - a.name.length)[0];
if (!cmd) {
  console.error(`usage: npm run admin -- <command>\n\n${commands.map((c) => '  ' + c.usage).join('\n')}`);
  process.exit(argv.length && argv[0] !== 'help' ? 2 : 0);
}
const config = loadConfigOrExit();
const log = createLogger('admin', process.env.LOG_LEVEL ?? 'warn', { stderr: true });
const url = (() => {
  try {
    return resolveNatsUrl(config);
  } catch (e) {
    console.error((e as Error).message);
    process.exit(2);
  }
})();
const urls = serverUrls(url);
const credsFile = config.nats.credsFile;
const cmdArgs = argv.slice(cmd.name.split(' ').length);
const watching = cmd.watches?.(cmdArgs) ?? false;
const began = Date.now();
let deadline = began + COMMAND_BUDGET_MS;
let current = 'connecting to NATS';
let conn: NatsConnection | undefined;

async function runCommand(): Promise<number> {
  // The CLI never provisions: it would set every stream's replicas to this shell's NATS_REPLICAS
  // (1 unless set), scaling a 3-replica cluster down. It uses what the service provisioned.
  let nc: NatsConnection;
  try {
    nc = conn = await connectNats(url, 'admin', credsFile);
  } catch (e) {
    throw await diagnose(undefined, urls, 'the connection', { credsFile }).catch(() => e);
  }
  // a majority of the listed servers down: say so at once instead of waiting out timeouts
  if (await knownWithoutQuorum(urls, { credsFile })) throw await diagnose(nc, urls, cmd!.name, { credsFile });
  const ctx: AdminContext = {
    nc,
    config,
    log,
    out: (l) => console.log(l),
    deadline: () => deadline,
    retry: (what, f) => {
      current = what;
      if (watching) deadline = Date.now() + COMMAND_BUDGET_MS; // each refresh of a watch gets the budget
      // short pauses: a failover ends within seconds and the operator is waiting
      return withRetry(what, f, { timeoutMs: Math.max(0, deadline - Date.now() - 3000), log, retryIf: isOutage, maxPauseMs: 1000 });
    },
  };
  try {
    return await cmd!.run(cmdArgs, ctx);
  } catch (e) {
    if (isOutage(e)) throw await diagnose(nc, urls, current, { credsFile });
    throw e;
  } finally {
    await nc.close().catch(() => {});
  }
}

let code: number;
try {
  // the budget bounds steps that carry their own long timeouts (a wallet call may wait 30 s); the
  // diagnosis has the budget's last 2.5 s, its own probes bounded to fit
  let timer: NodeJS.Timeout | undefined;
  const overrun = new Promise<never>((_, reject) => {
    if (!watching)
      timer = setTimeout(
        () => {
          diagnose(conn, urls, current, { credsFile, probeMs: 1000, jetStreamMs: 1200 }).then(reject, reject);
        },
        Math.max(0, deadline - Date.now() - 2500),
      );
  });
  code = await (watching ? runCommand() : Promise.race([runCommand(), overrun]));
  clearTimeout(timer);
} catch (e) {
  console.error(e instanceof ApiError ? `${e.code}: ${e.message}` : (e as Error).message);
  code = e instanceof ClusterError && e.kind !== 'timeout' ? 3 : 1;
}
// how long the command took from its start (the process's own start not included: see `time`)
log.info({ ms: Date.now() - began, startMs: Math.round(performance.now() - (Date.now() - began)), code }, `${cmd.name}: answered`);
process.exit(code);
