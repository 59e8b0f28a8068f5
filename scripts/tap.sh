#!/usr/bin/env bash
# tap, as the npm test scripts run it: Node's compile cache kept in node_modules (a second run skips
# compiling what it compiled before), and test/helpers/tap-no-hooks.mjs preloaded in front of tap's
# own preloads (why: that file's header). Arguments go to tap.
#
# With no test files named (`npm test`), the suite runs as two taps side by side, two files at a time
# each: the browser files (test/shots) in one, every other file in the other. tap sorts its files by
# path and has no order setting, so one tap of three ran the lighter files (nats-servers and apps that
# mostly wait) first with a quarter of the CPU idle, then the shots three at a time with the CPU at
# 90-97 %. Side by side, the waits of the one fill the CPU of the other, and no more than two browser
# files ever share the machine (they were three). The browser tap's report is printed when both are
# done, after the other's; the exit status is non-zero when either failed. docs/testing.md has the
# figures.
set -euo pipefail
cd "$(dirname "$0")/.."
export NODE_COMPILE_CACHE="$PWD/node_modules/.cache/node-compile-cache"
export NODE_OPTIONS="--import=./test/helpers/tap-no-hooks.mjs${NODE_OPTIONS:+ $NODE_OPTIONS}"

BROWSER_FILES='test/shots/**/*.test.ts'
named=0
for a in "$@"; do case "$a" in -*) ;; *) named=1 ;; esac; done
if [ "$named" = 1 ] || [ "${TAP_ONE_RUN:-}" = 1 ]; then exec tap "$@"; fi

browser_log=$(mktemp)
trap 'rm -f "$browser_log"' EXIT
tap --jobs=2 "$@" "$BROWSER_FILES" >"$browser_log" 2>&1 &
browser=$!
tap --jobs=2 --exclude="$BROWSER_FILES" "$@" &
other=$!
trap 'kill "$browser" "$other" 2>/dev/null; rm -f "$browser_log"' INT TERM
rc=0
wait "$other" || rc=$?
browser_rc=0
wait "$browser" || browser_rc=$?
cat "$browser_log"
if [ "$rc" -eq 0 ]; then rc=$browser_rc; fi
exit "$rc"
