// Operator CLI: `npm run admin -- <subcommand>`. Subcommands live in admin/commands/*.ts.
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { AdminCommand } from './command.ts';
import { connectNats } from '../shared/nats/connect.ts';
import { provision } from '../shared/nats/provision.ts';
import { createLogger } from '../shared/log.ts';
import { loadConfigOrExit, resolveNatsUrl } from '../shared/runtime.ts';
import { ApiError } from '../shared/errors.ts';

const dir = join(dirname(fileURLToPath(import.meta.url)), 'commands');
const commands: AdminCommand[] = [];
for (const f of readdirSync(dir).filter((f) => f.endsWith('.ts')).sort()) {
  const mod = (await import(pathToFileURL(join(dir, f)).href)) as { commands?: AdminCommand[] };
  commands.push(...(mod.commands ?? []));
}

const argv = process.argv.slice(2);
const cmd = commands
  .filter((c) => c.name.split(' ').every((w, i) => argv[i] === w))
  .sort((a, b) => b.name.length - a.name.length)[0];
if (!cmd) {
  console.error(`usage: npm run admin -- <command>\n\n${commands.map((c) => '  ' + c.usage).join('\n')}`);
  process.exit(argv.length && argv[0] !== 'help' ? 2 : 0);
}
const config = loadConfigOrExit();
const log = createLogger('admin', process.env.LOG_LEVEL ?? 'warn');
let code = 1;
try {
  const nc = await connectNats(resolveNatsUrl(config), 'admin', config.nats.credsFile);
  await provision(nc, config);
  try {
    code = await cmd.run(argv.slice(cmd.name.split(' ').length), { nc, config, log, out: (l) => console.log(l) });
  } finally {
    await nc.drain();
  }
} catch (e) {
  console.error(e instanceof ApiError ? `${e.code}: ${e.message}` : (e as Error).message);
  code = code === 0 ? 1 : code;
}
process.exit(code);
