#!/usr/bin/env bash
# tap, as the npm test scripts run it: Node's compile cache kept in node_modules (a second run skips
# compiling what it compiled before), and test/helpers/tap-no-hooks.mjs preloaded in front of tap's
# own preloads (why: that file's header). Arguments go to tap.
set -euo pipefail
cd "$(dirname "$0")/.."
export NODE_COMPILE_CACHE="$PWD/node_modules/.cache/node-compile-cache"
export NODE_OPTIONS="--import=./test/helpers/tap-no-hooks.mjs${NODE_OPTIONS:+ $NODE_OPTIONS}"
exec tap "$@"
