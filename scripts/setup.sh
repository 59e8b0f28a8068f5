#!/usr/bin/env bash
# Installs what the project needs on a fresh Debian machine, and nothing when it is all there:
# Debian packages (nats-server, browsers, fonts) with apt-get, npm packages from the lockfile.
set -euo pipefail
cd "$(dirname "$0")/.."

# nats-server must be >= 2.10.27: 2.9 (Debian 12's) cannot fsync before acknowledging
# (sync_interval is an unknown field there) and has the compare-and-set hole of shared/nats/cas.ts.
# Keep in step with NATS_SERVER_MIN in shared/nats/server.ts.
NATS_MIN=2.10.27
# strace: the durability test (test/reliability/fsync-order.test.ts) watches nats-server with it
# python3-cryptography: test/jobs/webhook-docs.test.ts runs the Python verification snippet of docs/webhooks.md
# iproute2: each browser runs in a network namespace of its own (actors/browser-pool/netns.ts brings its loopback up with `ip`)
# (nats-server is not in this list: it is checked by version below)
DEBS=(chromium firefox-esr fonts-liberation fonts-noto-color-emoji openssl ca-certificates strace python3-cryptography iproute2)

SUDO=""
as_root() {
  if [ "$(id -u)" -ne 0 ] && [ -z "$SUDO" ]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to $*" >&2; exit 1; }
    SUDO="sudo"
  fi
  $SUDO "$@"
}

# tests (test/platform/setup.test.ts) point these at a temp folder and a fake os-release
APT_ETC=${PAYLOADS_APT_ETC:-/etc/apt}
os_codename() { (. "${PAYLOADS_OS_RELEASE:-/etc/os-release}" 2>/dev/null && echo "${VERSION_CODENAME:-}"); }

nats_version() { nats-server --version 2>/dev/null | sed -n 's/^nats-server: v\{0,1\}//p'; }
nats_ok() { command -v nats-server >/dev/null && dpkg --compare-versions "$(nats_version)" ge "$NATS_MIN"; }

missing=()
for p in "${DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
nats_ok || missing+=(nats-server)

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  # Debian 12 carries only nats-server 2.9.10. Debian 13 (trixie) carries 2.10.x, a static Go binary
  # that runs on Debian 12 (libc6 >= 2.34). The trixie suite is added as an apt source pinned so
  # that nats-server is the ONLY package ever taken from it (priority -1 for everything else):
  # apt-get upgrade then brings Debian's security fixes for nats-server, and nothing else changes.
  # Only on Debian 12 (bookworm): a Debian 13 or newer machine has >= 2.10.27 in its own suite, and
  # there the pin would forbid every package of that suite.
  if [[ " ${missing[*]} " == *" nats-server "* ]] && [ "$(os_codename)" = bookworm ] && [ ! -f "$APT_ETC/sources.list.d/payloads-trixie.sources" ]; then
    as_root tee "$APT_ETC/sources.list.d/payloads-trixie.sources" >/dev/null <<'SRC'
# Added by payloads scripts/setup.sh: only nats-server is taken from here (see preferences.d/payloads-nats-server).
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    as_root tee "$APT_ETC/preferences.d/payloads-nats-server" >/dev/null <<'PIN'
# Added by payloads scripts/setup.sh: nats-server >= 2.10.27 from trixie, nothing else from it.
Package: nats-server
Pin: release n=trixie
Pin-Priority: 990

Package: *
Pin: release n=trixie
Pin-Priority: -1
PIN
  fi
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
  nats_ok || { echo "setup: nats-server $(nats_version) is installed, $NATS_MIN or newer is needed (apt-cache policy nats-server)" >&2; exit 1; }
fi

# npm packages, on the project's Node (node_modules/.bin/node, see scripts/npm-install.sh): when
# node_modules is missing, older than the lockfile, or holds another Node.
bash scripts/npm-install.sh >&2
