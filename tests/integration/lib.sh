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
# skip REASON: this test cannot run here; ctest counts exit 77 as skipped (SKIP_RETURN_CODE)
skip() { echo "SKIP: $*"; exit 77; }

# need_fmnist: skip unless the Fashion-MNIST files are where the runs read them
# (ORDO_MODEL_DATA_DIR, the conf's environment override, or the conf's default)
need_fmnist() {
  local d=${ORDO_MODEL_DATA_DIR:-/usr/share/datasets/fashion-mnist} f
  for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz \
           t10k-labels-idx1-ubyte.gz; do
    [ -r "$d/$f" ] || skip "Fashion-MNIST is not installed: no $d/$f (package dataset-fashion-mnist, or ORDO_MODEL_DATA_DIR)"
  done
}

# start NAME CMD...: run in the background, output in $T/NAME.log (emptied here first, so a
# `ready` right after never reads an earlier process's READY line from a log of that name)
start() { local name=$1; shift; : > "$T/$name.log"; "$@" > "$T/$name.log" 2>&1 & PID[$name]=$!; }

# ready NAME: wait (up to 60 s: a loaded machine, a sanitizer build) for the READY line and
# print its endpoint
ready() {
  for _ in $(seq 1 1200); do
    local l; l=$(grep -m1 '^READY ' "$T/$1.log" 2>/dev/null) && { echo "${l#READY }"; return 0; }
    sleep 0.05
  done
  fail "$1 never became ready"
}

# start_cluster RUN SERVERS WORKERS ARGS...: a scheduler, SERVERS servers and WORKERS
# ordo-workers of run RUN on loopback, each given the caller's "${common[@]}" and ARGS
start_cluster() {
  local run=$1 ns=$2 nw=$3 i ep; shift 3
  start scheduler "$BIN/ordo-scheduler" "${common[@]}" --output.run="$run" "$@" \
    --cluster.scheduler=tcp://127.0.0.1:0
  ep=$(ready scheduler)
  for ((i = 0; i < ns; i++)); do
    start server$i "$BIN/ordo-server" "${common[@]}" --output.run="$run" "$@" \
      --cluster.scheduler="$ep" --cluster.rank=$i
  done
  for ((i = 0; i < nw; i++)); do
    start worker$i "$BIN/ordo-worker" "${common[@]}" --output.run="$run" "$@" \
      --cluster.scheduler="$ep" --cluster.rank=$i
  done
}

# finish NAME SECONDS: wait for a process; its exit status (or "timeout") goes to $st. A
# process still running at the limit has its threads' stacks printed (when gdb is here).
finish() {
  local pid=${PID[$1]} n=$(( $2 * 20 ))
  st=timeout
  for _ in $(seq 1 $n); do
    if ! kill -0 "$pid" 2>/dev/null; then wait "$pid"; st=$?; return; fi
    sleep 0.05
  done
  stacks "$1" "$pid"
}

# stacks NAME PID: the threads' stacks of a process that did not end, for the test's log
stacks() {
  command -v gdb > /dev/null || return 0
  echo "--- $1 (pid $2) did not end; its threads:"
  timeout 60 gdb -p "$2" -batch -ex "thread apply all bt" 2>/dev/null |
    grep -E '^(Thread|#)' | sed -E 's/ \(.*\) at / at /' | head -n 80
}

# netns_probe: skip (exit 77) unless network namespaces work here, naming the step that
# failed: create two namespaces joined by a veth pair, enter one (`ip netns exec`: in a
# chroot its "mount --make-rslave /" fails), address both ends, reach one from the other
# (ping, or a TCP connection refused at once when ping is not installed). Needs ip
# (iproute2); deletes what it made. Every test that uses namespaces calls it first
# (two_hosts does).
netns_probe() {
  [ "${NETNS_PROBED:-0}" = 1 ] && return 0
  command -v ip > /dev/null || skip "network namespaces: ip (iproute2) is not installed"
  local a=ordo-probe-$$-a b=ordo-probe-$$-b va=opr$$a vb=opr$$b net=10.213.99 step="" err out
  err=$(
    set -o pipefail
    trap 'ip netns del '"$a"' 2>/dev/null; ip netns del '"$b"' 2>/dev/null; ip link del '"$va"' 2>/dev/null' EXIT
    step="create (ip netns add, ip link add type veth)"
    { ip netns add "$a" && ip netns add "$b" && ip link add "$va" type veth peer name "$vb" &&
      ip link set "$va" netns "$a" && ip link set "$vb" netns "$b"; } 2>&1 || { echo "$step"; exit 1; }
    step="enter (ip netns exec)"
    ip netns exec "$a" true 2>&1 || { echo "$step"; exit 1; }
    step="address (ip addr add, ip link set up)"
    { ip -n "$a" addr add "$net.1/24" dev "$va" && ip -n "$b" addr add "$net.2/24" dev "$vb" &&
      ip -n "$a" link set lo up && ip -n "$b" link set lo up &&
      ip -n "$a" link set "$va" up && ip -n "$b" link set "$vb" up; } 2>&1 || { echo "$step"; exit 1; }
    if command -v ping > /dev/null; then
      step="ping $net.2 from the other namespace"
      out=$(ip netns exec "$a" ping -c 1 -W 5 "$net.2" 2>&1) || { tail -n 1 <<< "$out"; echo "$step"; exit 1; }
    else
      step="reach $net.2 from the other namespace (a TCP connection to a closed port)"
      ip netns exec "$a" python3 -c '
import socket, sys
try:
    socket.create_connection((sys.argv[1], 9), timeout=5)
except ConnectionRefusedError:
    sys.exit(0)
except OSError as e:
    sys.exit(str(e))
' "$net.2" 2>&1 || { echo "$step"; exit 1; }
    fi
  ) || {
    local why=${err##*$'\n'} out=${err%$'\n'*}
    [ "$out" != "$err" ] || out="(no error text)"
    skip "network namespaces do not work here: $why failed: $(head -n 1 <<< "$out")"
  }
  NETNS_PROBED=1
}

# two_hosts A B VA VB NET: two test hosts, network namespaces A and B joined by a veth pair
# (VA in A, VB in B) addressed NET.1 and NET.2, loopbacks up. Skips (netns_probe) where
# namespaces cannot be made, entered, addressed or reached; once the probe passed, a failing
# step is a failure. The caller deletes them (netns_cleanup A B VA) on exit.
two_hosts() {
  local a=$1 b=$2 va=$3 vb=$4 net=$5
  netns_probe
  ip netns add "$a" || fail "cannot create a network namespace (ip netns add)"
  ip netns add "$b" || fail "cannot create a second network namespace"
  ip link add "$va" type veth peer name "$vb" || fail "cannot make a veth pair"
  ip link set "$va" netns "$a" && ip link set "$vb" netns "$b" || fail "cannot move the veth ends"
  ip -n "$a" addr add "$net.1/24" dev "$va" && ip -n "$b" addr add "$net.2/24" dev "$vb" ||
    fail "cannot address the veth ends"
  for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
  ip -n "$a" link set "$va" up && ip -n "$b" link set "$vb" up || fail "cannot bring the veth up"
}

# netns_cleanup A B VA: delete what two_hosts made (quietly, whatever exists)
netns_cleanup() {
  ip netns del "$1" 2>/dev/null
  ip netns del "$2" 2>/dev/null
  ip link del "$3" 2>/dev/null
  true
}
