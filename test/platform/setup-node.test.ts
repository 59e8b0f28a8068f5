// scripts/npm-install.sh, run for real (bash, the real Node binaries) in a temp project folder, with
// npm replaced by stand-ins that record which Node runs them and with which arguments (a real
// `npm ci` needs the registry). What it must do: nothing when node_modules matches the lockfile and
// holds the wanted Node; otherwise run npm on the project's Node (node_modules/.bin/node) even when
// the machine's Node is older, with nodedir at that Node's headers; on a first install or a
// node_modules of another Node, fetch the wanted Node through `npm exec` and run npm on it.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../shared/config/index.ts';
import { tempDir } from '../helpers/nats.ts';

const arch = process.arch === 'x64' ? 'x64' : process.arch === 'arm64' ? 'arm64' : '';
const pkg = `node-linux-${arch}`;
const want = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).optionalDependencies ?? {})[pkg] as string | undefined;
const projectNode = join(ROOT, 'node_modules', pkg, 'bin/node');
/** an older Node on this machine, to play the machine's (the bootstrap's) Node */
const machineNode = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => existsSync(p) && realpathSync(p) !== realpathSync(projectNode));
const skip =
  !arch || !want || !existsSync(projectNode)
    ? 'no node-linux build for this machine'
    : !machineNode
      ? 'no other Node on this machine to start npm with'
      : false;

function project(o: { binNode: string | null; stale: boolean }) {
  const dir = tempDir('payloads-npm-install-');
  mkdirSync(join(dir, 'scripts'));
  copyFileSync(join(ROOT, 'scripts/npm-install.sh'), join(dir, 'scripts/npm-install.sh'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ optionalDependencies: { [pkg]: want } }));
  writeFileSync(join(dir, 'package-lock.json'), '{}');
  mkdirSync(join(dir, 'node_modules/.bin'), { recursive: true });
  writeFileSync(join(dir, 'node_modules/.package-lock.json'), '{}');
  const old = new Date(Date.now() - 60_000);
  const fresh = new Date();
  // the stamp is older than the lockfile when stale
  for (const f of ['package.json', 'package-lock.json']) utimesSync(join(dir, f), old, old);
  if (o.stale) utimesSync(join(dir, 'node_modules/.package-lock.json'), new Date(Date.now() - 120_000), new Date(Date.now() - 120_000));
  else utimesSync(join(dir, 'node_modules/.package-lock.json'), fresh, fresh);
  if (o.binNode) symlinkSync(o.binNode, join(dir, 'node_modules/.bin/node'));
  // npm's CLI stand-in: records the Node it runs on, its arguments and nodedir, then does what
  // `npm ci` does to node_modules/.bin/node (links the project's Node)
  const calls = join(dir, 'npm-calls');
  const cli = join(dir, 'fake-npm', 'npm-cli.js');
  mkdirSync(join(dir, 'fake-npm'));
  writeFileSync(
    cli,
    `const fs = require('node:fs'), path = require('node:path');
fs.appendFileSync(${JSON.stringify(calls)}, JSON.stringify({ node: process.version, args: process.argv.slice(2), nodedir: process.env.npm_config_nodedir }) + '\\n');
const bin = path.join(${JSON.stringify(dir)}, 'node_modules/.bin/node');
fs.rmSync(bin, { force: true }); fs.symlinkSync(${JSON.stringify(projectNode)}, bin);\n`,
  );
  // the machine: its Node first on PATH, and an npm whose only use here is \`npm exec --package=<node> -- node ...\`
  const bin = join(dir, 'machine-bin');
  mkdirSync(bin);
  // tap's child-process tracking hands every child its NODE_OPTIONS, which on Node 22 hold
  // --experimental-strip-types (type-strip-only): an older Node refuses to start with it. A machine's
  // Node never sees it outside the tests, so the stand-in starts it without.
  writeFileSync(join(bin, 'node'), `#!/bin/sh\nunset NODE_OPTIONS\nexec '${machineNode}' "$@"\n`);
  chmodSync(join(bin, 'node'), 0o755);
  writeFileSync(
    join(bin, 'npm'),
    `#!/bin/bash\necho "npm $*" >> '${calls}.exec'\nwhile [ "$1" != "--" ]; do shift; done; shift; [ "$1" = node ] && shift\nexec '${projectNode}' "$@"\n`,
  );
  chmodSync(join(bin, 'npm'), 0o755);
  const r = spawnSync('bash', [join(dir, 'scripts/npm-install.sh')], {
    encoding: 'utf8',
    env: { PATH: `${bin}:/usr/bin:/bin`, HOME: process.env.HOME, PAYLOADS_NPM_CLI: cli },
  });
  const lines = (f: string) => (existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').filter(Boolean) : []);
  return {
    dir,
    code: r.status,
    err: r.stderr,
    npm: lines(calls).map((l) => JSON.parse(l) as { node: string; args: string[]; nodedir?: string }),
    exec: lines(`${calls}.exec`),
  };
}

t.test('up to date, with the wanted Node: npm is not run', { skip }, async (t) => {
  const r = project({ binNode: projectNode, stale: false });
  t.equal(r.code, 0, r.err);
  t.same(r.npm, []);
  t.same(r.exec, []);
});

t.test("lockfile newer than node_modules: npm ci runs on the project's Node, not the machine's", { skip }, async (t) => {
  const r = project({ binNode: projectNode, stale: true });
  t.equal(r.code, 0, r.err);
  t.equal(r.npm.length, 1);
  t.equal(r.npm[0]!.node, `v${want}`);
  t.match(r.npm[0]!.args, ['ci', '--no-audit', '--no-fund', '--prefix', r.dir]);
  t.equal(r.npm[0]!.nodedir, join(r.dir, 'node_modules', pkg), "native builds get the project Node's headers");
  t.same(r.exec, [], 'no fetch: the wanted Node is there');
  t.match(r.err, new RegExp(`installing npm packages on Node ${want!.replace(/\./g, '\\.')} \\(machine: v\\d+`));
});

t.test('first install on an older machine Node: the wanted Node is fetched with npm exec and runs npm', { skip }, async (t) => {
  const r = project({ binNode: null, stale: true });
  t.equal(r.code, 0, r.err);
  t.equal(r.exec.length, 1);
  t.match(r.exec[0], `exec --yes --package=${pkg}@${want} -- node`);
  t.equal(r.npm[0]!.node, `v${want}`);
});

t.test('a node_modules of another Node (up to date otherwise) is installed again on the wanted one', { skip }, async (t) => {
  const r = project({ binNode: machineNode!, stale: false });
  t.equal(r.code, 0, r.err);
  t.equal(r.npm.length, 1, 'reinstalled');
  t.equal(r.npm[0]!.node, `v${want}`);
  t.equal(spawnSync(join(r.dir, 'node_modules/.bin/node'), ['--version'], { encoding: 'utf8' }).stdout.trim(), `v${want}`);
});

t.test('main.ts started by hand on an older Node stops and says which Node to use', { skip }, async (t) => {
  // without the tests' NODE_OPTIONS (see above); tsx: the machine's older Node cannot strip types itself
  const r = spawnSync('sh', ['-c', 'unset NODE_OPTIONS; exec "$@"', 'sh', machineNode!, '--import', 'tsx', 'main.ts', 'wallet'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, NATS_URL: 'nats://127.0.0.1:1' },
    timeout: 120_000,
  });
  t.equal(r.status, 1, r.stderr);
  t.match(r.stderr, /payloads needs Node >= 22\.18; this is v\d+/);
  t.match(r.stderr, /npm start|node_modules\/\.bin\/node/);
});
