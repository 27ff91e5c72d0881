#!/usr/bin/env bash
# bootstrap.sh — installs everything dk's build and tests need on a fresh Debian machine:
# Debian -dev packages for the C core and a Python venv (.venv) with pinned oracles.
# Idempotent: does nothing that is already done.
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PKGS=(cmake ninja-build pkg-config gcc libzstd-dev libsnappy-dev liblz4-dev zlib1g-dev
          libdeflate-dev libbrotli-dev libroaring-dev libsqlite3-dev sqlite3)
missing=()
for p in "${DEB_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv"
  $PY -m venv .venv
fi
stamp=.venv/.requirements.stamp
if [ ! -f "$stamp" ] || ! cmp -s requirements-dev.txt "$stamp"; then
  echo "bootstrap: installing pinned Python packages"
  .venv/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt
  cp requirements-dev.txt "$stamp"
fi
