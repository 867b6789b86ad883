# lib.sh: helpers for ordo's shell integration tests. Every process started with `start`
# is killed when the test exits, pass or fail.
set -u
BIN=${ORDO_BIN_DIR:-build/bin}
T=$(mktemp -d /tmp/ordo-it.XXXXXX)
declare -A PID
cleanup_all() {
  for p in "${PID[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  if [ "${KEEP:-0}" != 1 ]; then rm -rf "$T"; fi
}
trap cleanup_all EXIT

fail() { echo "FAIL: $*"; for f in "$T"/*.log; do echo "--- $f"; tail -n 15 "$f"; done; exit 1; }
ok() { echo "ok: $*"; }

# start NAME CMD...: run in the background, output in $T/NAME.log
start() { local name=$1; shift; "$@" > "$T/$name.log" 2>&1 & PID[$name]=$!; }

# ready NAME: wait (10 s) for the READY line and print its endpoint
ready() {
  for _ in $(seq 1 200); do
    local l; l=$(grep -m1 '^READY ' "$T/$1.log" 2>/dev/null) && { echo "${l#READY }"; return 0; }
    sleep 0.05
  done
  fail "$1 never became ready"
}

# finish NAME SECONDS: wait for a process; its exit status (or "timeout") goes to $st
finish() {
  local pid=${PID[$1]} n=$(( $2 * 20 ))
  st=timeout
  for _ in $(seq 1 $n); do
    if ! kill -0 "$pid" 2>/dev/null; then wait "$pid"; st=$?; return; fi
    sleep 0.05
  done
}
