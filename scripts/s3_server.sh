#!/usr/bin/env bash
# s3_server.sh — a real S3-compatible server on 127.0.0.1 for dk's tests and for users:
# SeaweedFS (Apache-2.0) `weed mini` (master, volume, filer and S3 gateway in one process),
# built from the Go module proxy at a pinned version. It honours conditional PUTs
# (If-None-Match: *, evaluated under the filer's per-object lock), which dk's commits need.
#
#   scripts/s3_server.sh build    build weed into the tool cache unless it is there
#   scripts/s3_server.sh start    build if needed, start, wait until the bucket answers, then
#                                 print `export` lines: AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,
#                                 AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ALLOW_HTTP
#                                 (eval "$(scripts/s3_server.sh start)")
#   scripts/s3_server.sh stop     stop it (the data stays in DK_S3_DIR)
#   scripts/s3_server.sh path     print the weed binary (building it if needed)
#
# Environment:
#   DK_S3_PORT    S3 port (default 8333); the server also takes the 3 ports after it
#                 (master, volume, filer) and each of the four + 10000 (gRPC).
#   DK_S3_DIR     state: data, pid file, log (default build/s3-server in the repository)
#   DK_S3_BUCKET  bucket created at start (default dk-test)
#   DK_TOOLS_DIR  build cache shared by every checkout and CI run on this machine
#                 (default ~/.cache/dk/tools; re-created when absent)
# Keys are fixed test credentials (the server holds test data only, on loopback).
set -euo pipefail
cd "$(dirname "$0")/.."

SEAWEEDFS_MODULE=github.com/seaweedfs/seaweedfs
SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6
TOOLS=${DK_TOOLS_DIR:-$HOME/.cache/dk/tools}
WEED=$TOOLS/seaweedfs-$SEAWEEDFS_VERSION/weed
PORT=${DK_S3_PORT:-8333}
DIR=${DK_S3_DIR:-$PWD/build/s3-server}
BUCKET=${DK_S3_BUCKET:-dk-test}
ACCESS_KEY=dk-test-access-key
SECRET_KEY=dk-test-secret-key-0123456789
REGION=us-east-1

log() { echo "s3_server: $*" >&2; }

build() {
  [ -x "$WEED" ] && return 0
  command -v go >/dev/null || [ ! -x /usr/local/go/bin/go ] || PATH=$PATH:/usr/local/go/bin
  command -v go >/dev/null || { log "go is not installed (needed to build SeaweedFS)"; exit 1; }
  log "building SeaweedFS weed $SEAWEEDFS_VERSION (Go module proxy; once per machine, a few minutes)"
  mkdir -p "$(dirname "$WEED")"
  export GOTOOLCHAIN=local GOFLAGS=-mod=mod
  # `go install mod@version` refuses modules with replace directives (SeaweedFS has one), so
  # the module is fetched as a module and built as the main module from the module cache.
  local src
  src=$(go mod download -json "$SEAWEEDFS_MODULE@$SEAWEEDFS_VERSION" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$src" ] && [ -d "$src/weed" ] || { log "go mod download gave no source dir"; exit 1; }
  (cd "$src" && go build -trimpath -o "$WEED.tmp.$$" ./weed) >&2
  mv -f "$WEED.tmp.$$" "$WEED"
  log "built $WEED"
}

pid_alive() { [ -f "$DIR/weed.pid" ] && kill -0 "$(cat "$DIR/weed.pid")" 2>/dev/null; }

start() {
  build
  mkdir -p "$DIR/data"
  if pid_alive; then
    log "already running (pid $(cat "$DIR/weed.pid"))"
  else
    cat >"$DIR/s3.json" <<EOF
{"identities": [{"name": "dk", "credentials": [{"accessKey": "$ACCESS_KEY", "secretKey": "$SECRET_KEY"}],
                 "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]}
EOF
    local p=$PORT
    # -master.telemetry=false: nothing leaves the machine; no WebDAV, admin UI, Iceberg or
    # Lance listeners; buckets are never created implicitly (a missing bucket stays missing);
    # -s3.domainName=localhost serves virtual-hosted requests to <bucket>.localhost.
    setsid "$WEED" mini -dir="$DIR/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
      -s3.port="$p" -master.port=$((p + 1)) -volume.port=$((p + 2)) -filer.port=$((p + 3)) \
      -s3.port.grpc=$((p + 10000)) -master.port.grpc=$((p + 10001)) \
      -volume.port.grpc=$((p + 10002)) -filer.port.grpc=$((p + 10003)) \
      -s3.port.iceberg=0 -s3.port.lance=0 -webdav=false -admin.ui=false \
      -master.telemetry=false -s3.autoCreateBucket=false -s3.config="$DIR/s3.json" \
      -s3.domainName=localhost \
      -bucket="$BUCKET" >"$DIR/weed.log" 2>&1 </dev/null &
    echo $! >"$DIR/weed.pid"
  fi
  # ready when a signed HEAD of the bucket answers 200
  local i code
  for i in $(seq 1 240); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -I \
           --aws-sigv4 "aws:amz:$REGION:s3" -u "$ACCESS_KEY:$SECRET_KEY" \
           "http://127.0.0.1:$PORT/$BUCKET" || true)
    [ "$code" = 200 ] && break
    pid_alive || { log "weed exited; its log:"; tail -30 "$DIR/weed.log" >&2; exit 1; }
    sleep 0.5
  done
  [ "$code" = 200 ] || { log "no answer on port $PORT after 120 s (see $DIR/weed.log)"; exit 1; }
  log "SeaweedFS S3 on http://127.0.0.1:$PORT, bucket $BUCKET (pid $(cat "$DIR/weed.pid"))"
  cat <<EOF
export AWS_ENDPOINT_URL=http://127.0.0.1:$PORT
export AWS_ACCESS_KEY_ID=$ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$SECRET_KEY
export AWS_REGION=$REGION
export AWS_ALLOW_HTTP=true
export DK_S3_BUCKET=$BUCKET
EOF
}

stop() {
  if ! pid_alive; then
    log "not running"
    rm -f "$DIR/weed.pid"
    return 0
  fi
  local pid
  pid=$(cat "$DIR/weed.pid")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  rm -f "$DIR/weed.pid"
  log "stopped (pid $pid)"
}

case "${1:-}" in
  build) build ;;
  path) build; echo "$WEED" ;;
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 build|start|stop|path" >&2; exit 2 ;;
esac
