// scripts/setup.sh's nats-server step, run for real (bash, dpkg --compare-versions) with apt-get and
// nats-server replaced by stand-ins on PATH and the apt folder pointed at a temp dir: the machine's
// own apt configuration is not touched. What it must do: leave a new-enough server alone; on Debian
// 12 with 2.9.10 (or none) add trixie pinned to nats-server only and install it; stop with a clear
// message when the install did not bring a new-enough server; on Debian 13 add no pin.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../shared/config/index.ts';
import { tempDir } from '../helpers/nats.ts';

function run(o: { installed: string | null; installBrings: string | null; codename?: string }) {
  const dir = tempDir('payloads-setup-');
  // a project folder whose node_modules is up to date (and no Node pinned), so the npm step does nothing
  mkdirSync(join(dir, 'scripts'));
  copyFileSync(join(ROOT, 'scripts/setup.sh'), join(dir, 'scripts/setup.sh'));
  copyFileSync(join(ROOT, 'scripts/npm-install.sh'), join(dir, 'scripts/npm-install.sh'));
  writeFileSync(join(dir, 'package.json'), '{}');
  writeFileSync(join(dir, 'package-lock.json'), '{}');
  const old = new Date(Date.now() - 60_000);
  utimesSync(join(dir, 'package.json'), old, old);
  utimesSync(join(dir, 'package-lock.json'), old, old);
  mkdirSync(join(dir, 'node_modules'));
  writeFileSync(join(dir, 'node_modules/.package-lock.json'), '{}');
  const apt = join(dir, 'etc-apt');
  mkdirSync(join(apt, 'sources.list.d'), { recursive: true });
  mkdirSync(join(apt, 'preferences.d'), { recursive: true });
  const osRelease = join(dir, 'os-release');
  writeFileSync(osRelease, `ID=debian\nVERSION_CODENAME=${o.codename ?? 'bookworm'}\n`);
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  const state = join(dir, 'nats-version');
  const calls = join(dir, 'apt-calls');
  if (o.installed) writeFileSync(state, o.installed);
  // nats-server exists only once a version is in the state file, as after an install
  writeFileSync(join(bin, 'nats-server'), `#!/bin/sh\n[ -f '${state}' ] || exit 127\necho "nats-server: v$(cat '${state}')"\n`);
  writeFileSync(
    join(bin, 'apt-get'),
    `#!/bin/sh\necho "$*" >> '${calls}'\ncase "$*" in *install*nats-server*) ${o.installBrings ? `echo '${o.installBrings}' > '${state}'` : 'true'};; esac\n`,
  );
  chmodSync(join(bin, 'nats-server'), 0o755);
  chmodSync(join(bin, 'apt-get'), 0o755);
  const r = spawnSync('bash', [join(dir, 'scripts/setup.sh')], {
    encoding: 'utf8',
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, PAYLOADS_APT_ETC: apt, PAYLOADS_OS_RELEASE: osRelease },
  });
  const read = (f: string) => (existsSync(f) ? readFileSync(f, 'utf8') : null);
  return {
    code: r.status,
    err: r.stderr,
    apt: (read(calls) ?? '').trim().split('\n').filter(Boolean),
    source: read(join(apt, 'sources.list.d/payloads-trixie.sources')),
    pin: read(join(apt, 'preferences.d/payloads-nats-server')),
  };
}

t.test('a new-enough server: nothing is installed, no apt source added', async (t) => {
  const r = run({ installed: '2.10.27', installBrings: null });
  t.equal(r.code, 0, r.err);
  t.same(r.apt, []);
  t.equal(r.source, null);
  t.equal(r.pin, null);
});

t.test('Debian 12 with 2.9.10: trixie added, pinned to nats-server alone, and nats-server installed', async (t) => {
  const r = run({ installed: '2.9.10', installBrings: '2.10.27' });
  t.equal(r.code, 0, r.err);
  t.match(r.source, /Suites: trixie/);
  t.match(r.source, /URIs: http:\/\/deb\.debian\.org\/debian/);
  t.match(r.pin, /Package: nats-server\nPin: release n=trixie\nPin-Priority: 990/);
  t.match(r.pin, /Package: \*\nPin: release n=trixie\nPin-Priority: -1/, 'every other trixie package is never taken');
  t.equal(r.apt[0], 'update -qq');
  t.match(r.apt[1], /^install -y -qq .*nats-server$/);
});

t.test('a fresh Debian 12 machine (no nats-server): the same', async (t) => {
  const r = run({ installed: null, installBrings: '2.10.28' });
  t.equal(r.code, 0, r.err);
  t.match(r.pin, /Pin-Priority: 990/);
  t.match(r.apt[1], /nats-server/);
});

t.test('an install that leaves an old server: setup stops and says what is needed', async (t) => {
  const r = run({ installed: '2.9.10', installBrings: null });
  t.equal(r.code, 1);
  t.match(r.err, /nats-server 2\.9\.10 is installed, 2\.10\.27 or newer is needed/);
});

t.test('Debian 13: nats-server from its own suite, no pin (it would forbid that suite)', async (t) => {
  const r = run({ installed: null, installBrings: '2.10.29', codename: 'trixie' });
  t.equal(r.code, 0, r.err);
  t.equal(r.source, null);
  t.equal(r.pin, null);
  t.match(r.apt[1], /nats-server/);
});
