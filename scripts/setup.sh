#!/usr/bin/env bash
# Installs what the project needs on a fresh Debian machine, and nothing when it is all there:
# Debian packages (nats-server, browsers, fonts) with apt-get, npm packages from the lockfile.
set -euo pipefail
cd "$(dirname "$0")/.."

# python3-cryptography: test/jobs/webhook-docs.test.ts runs the Python verification snippet of docs/webhooks.md
DEBS=(nats-server chromium firefox-esr fonts-liberation fonts-noto-color-emoji openssl ca-certificates python3-cryptography)
missing=()
for p in "${DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to apt-get install ${missing[*]}" >&2; exit 1; }
    SUDO="sudo"
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >&2
fi

# npm packages: install when node_modules is missing or older than the lockfile.
stamp=node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ] || [ package.json -nt "$stamp" ]; then
  echo "setup: installing npm packages (native builds approved in package.json allowScripts)" >&2
  if [ -f package-lock.json ]; then npm ci --no-audit --no-fund >&2; else npm install --no-audit --no-fund >&2; fi
fi
