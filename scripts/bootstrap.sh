#!/usr/bin/env bash
# bootstrap.sh — installs everything dk's build and tests need on a fresh Debian machine:
# Debian -dev packages for the C core (libcurl and expat for the S3 backend; curl for
# scripts/s3_server.sh), Maven and a JDK 17 or 21 for the Spark connector
# (connectors/spark; Spark 4.2 runs on 17 and 21 only), and a Python venv (.venv) with pinned
# oracles. pyspark/delta-spark and the Delta jars come later, from scripts/install_spark.sh.
# Idempotent: does nothing that is already done.
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PKGS=(cmake ninja-build pkg-config gcc libzstd-dev libsnappy-dev liblz4-dev zlib1g-dev
          libdeflate-dev libbrotli-dev libroaring-dev libsqlite3-dev sqlite3 maven
          libcurl4-openssl-dev libexpat1-dev curl libcsv-dev libpcre2-dev libmd-dev
          clang)  # clang: libFuzzer for `make fuzz`
missing=()
for p in "${DEB_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A JDK (javac, jni.h) that Spark 4.2 accepts: any 17 or 21 under /usr/lib/jvm will do.
have_jdk=0
for h in /usr/lib/jvm/*; do
  [ -x "$h/bin/javac" ] && [ -f "$h/include/jni.h" ] && [ -f "$h/release" ] || continue
  grep -Eq '^JAVA_VERSION="?(17|21)[."]' "$h/release" && have_jdk=1
done
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
if ((${#missing[@]})) || [ $have_jdk = 0 ]; then
  $SUDO apt-get update -qq
fi
if [ $have_jdk = 0 ]; then
  # Debian 12 ships openjdk-17, Debian 13 openjdk-21 (default-jdk-headless is either, or newer)
  for p in openjdk-17-jdk-headless openjdk-21-jdk-headless; do
    if apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: [0-9]'; then missing+=("$p"); break; fi
  done
fi
if ((${#missing[@]})); then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
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
