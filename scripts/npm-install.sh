#!/usr/bin/env bash
# Installs the npm packages from the lockfile, with npm itself running on the project's Node: the
# node-linux-<arch> package of package.json's optionalDependencies, which npm links as
# node_modules/.bin/node (npm scripts and npx find it first on PATH). The machine's Node (>= 20) only
# starts npm. Why npm must run on the project's Node: npm checks `engines` against the Node it runs
# on (packages needing >= 22 would warn EBADENGINE under 20), and anything an install script builds
# is built for that Node (node-gyp gets the project Node's headers, not ~/.npmrc's nodedir).
# Nothing to do when node_modules matches the lockfile and holds the wanted Node.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

case "$(uname -m)" in x86_64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) arch="" ;; esac
pkg=${arch:+node-linux-$arch}
want=""
[ -n "$pkg" ] && want=$(node -p "(require('./package.json').optionalDependencies || {})['$pkg'] || ''")

stamp=node_modules/.package-lock.json
have=$( [ -x node_modules/.bin/node ] && node_modules/.bin/node --version 2>/dev/null || true)
if [ -f "$stamp" ] && [ ! package-lock.json -nt "$stamp" ] && [ ! package.json -nt "$stamp" ] && { [ -z "$want" ] || [ "$have" = "v$want" ]; }; then
  exit 0
fi

# npm's own CLI script, to start it on another Node
npm_cli=${PAYLOADS_NPM_CLI:-${npm_execpath:-}}
[[ "$npm_cli" == *npm-cli.js ]] || npm_cli=$(readlink -f "$(command -v npm)")
[[ "$npm_cli" == *npm-cli.js ]] || npm_cli="$(npm root -g)/npm/bin/npm-cli.js"

cmd=ci
[ -f package-lock.json ] || cmd=install
args=("$npm_cli" "$cmd" --no-audit --no-fund --prefix "$root")
machine=$(node --version)
if [ -z "$want" ]; then
  echo "setup: package.json has no Node build for $(uname -m); npm and the service run on the machine's Node $machine" >&2
  exec node "${args[@]}"
fi
# node-gyp builds against these headers (the package ships include/node), never ~/.npmrc's nodedir
export npm_config_nodedir="$root/node_modules/$pkg"
echo "setup: installing npm packages on Node $want (machine: $machine; native builds approved in package.json allowScripts)" >&2
if [ "$have" = "v$want" ]; then
  cp node_modules/.bin/node "${TMPDIR:-/tmp}/payloads-node-$want.$$"   # npm ci removes node_modules first
  trap 'rm -f "${TMPDIR:-/tmp}/payloads-node-$want.$$"' EXIT
  "${TMPDIR:-/tmp}/payloads-node-$want.$$" "${args[@]}"
elif [ "$(node -p 'process.versions.node.split(".")[0]')" = "${want%%.*}" ]; then
  node "${args[@]}"
else
  # first install: fetch the wanted Node into npm's cache (npx), run npm on it; from a neutral
  # folder, so that npx does not look for it in this project's (not yet installed) packages
  (cd "${TMPDIR:-/tmp}" && npm exec --yes --package="$pkg@$want" -- node "${args[@]}")
fi
got=$(node_modules/.bin/node --version)
[ "$got" = "v$want" ] || { echo "setup: node_modules/.bin/node is $got, v$want was wanted" >&2; exit 1; }
