#!/usr/bin/env bash
# install_spark.sh — installs the interop oracle (Spark + Delta Lake) for tests/interop:
#   * a JDK that Spark 4.2 accepts (17 or 21; Debian's openjdk-17-jdk-headless if none is present),
#   * the pinned pyspark/delta-spark pair of tests/interop/requirements.txt into .venv,
#   * the Delta Lake jars (io.delta:delta-spark_4.2_2.13 and its dependencies) from Maven Central
#     into Ivy's cache (~/.ivy2.5.2), by starting one SparkSession and writing a tiny table,
#     so test time does not include downloads.
# Idempotent: each step is skipped when already done (stamp file / cached jar).
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)

[ -x .venv/bin/python ] || scripts/bootstrap.sh

# --- Java -------------------------------------------------------------------------------------
java_major() {  # $1 = JAVA_HOME candidate; prints the major version or nothing
  [ -x "$1/bin/java" ] && [ -f "$1/release" ] || return 0
  sed -n 's/^JAVA_VERSION="\{0,1\}\([0-9]*\).*/\1/p' "$1/release"
}
find_java() {
  if [ -n "${JAVA_HOME:-}" ] && [[ "$(java_major "$JAVA_HOME")" =~ ^(17|21)$ ]]; then
    echo "$JAVA_HOME"; return; fi
  for h in /usr/lib/jvm/*; do
    if [[ "$(java_major "$h")" =~ ^(17|21)$ ]]; then echo "$h"; return; fi
  done
}
JH=$(find_java || true)
if [ -z "$JH" ]; then
  echo "install_spark: installing openjdk-17-jdk-headless"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
  JH=$(find_java)
fi
export JAVA_HOME="$JH"
echo "install_spark: JAVA_HOME=$JAVA_HOME (Java $(java_major "$JAVA_HOME"))"

# --- Python packages --------------------------------------------------------------------------
req=tests/interop/requirements.txt
stamp=.venv/.interop-requirements.stamp
if [ ! -f "$stamp" ] || ! cmp -s "$req" "$stamp"; then
  echo "install_spark: installing pinned pyspark/delta-spark into .venv"
  .venv/bin/pip install -q --disable-pip-version-check -r "$req"
  cp "$req" "$stamp"
fi
t1=$(date +%s)

# --- Delta jars (Maven Central -> Ivy cache) ----------------------------------------------------
delta_ver=$(sed -n 's/^delta-spark==//p' "$req")
spark_mm=$(sed -n 's/^pyspark==\([0-9]*\.[0-9]*\).*/\1/p' "$req")
jar="$HOME/.ivy2.5.2/jars/io.delta_delta-spark_${spark_mm}_2.13-${delta_ver}.jar"
if [ ! -f "$jar" ]; then
  echo "install_spark: fetching Delta jars (first SparkSession start)"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  .venv/bin/python - "$tmp" <<'EOF'
import os, sys
sys.path.insert(0, "tests/interop")
from sparkenv import get_spark
spark = get_spark("dk-interop-warmup")
p = os.path.join(sys.argv[1], "t")
spark.range(3).write.format("delta").save(p)
assert spark.read.format("delta").load(p).count() == 3
spark.stop()
EOF
  [ -f "$jar" ] || { echo "install_spark: expected $jar after warm-up" >&2; exit 1; }
fi
t2=$(date +%s)
echo "install_spark: done (packages $((t1 - t0))s, jars $((t2 - t1))s)"
