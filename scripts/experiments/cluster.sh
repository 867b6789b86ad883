#!/usr/bin/env bash
# cluster.sh: checks `ordo-plan cluster` against real runs (issue 41, docs/planning.md). Each
# grid point is a cluster of network namespaces on one bridge: worker hosts h0.., each with
# L ordo-workers (emulated compute from a profile), and server hosts s0.., one ordo-server each
# (the scheduler on s0). Every host's veth is shaped with tbf on both ends to its link rate,
# so each host has a link of that rate each way. For each point the script asks
# `ordo-plan cluster --json` for the predicted step with the point's settings fixed, runs the
# cluster with the slice and credit the planner chose, and compares the measured step
# (the median of every worker's steps but the two warm-up iterations, when workers start at
# different times, and the last, which nothing follows) with the prediction. It also records the
# CPU the run's own processes used (cores on average over the run): where they need most of
# the machine's 2 cores, the emulated cluster is CPU-bound, not network-bound; the report
# shows it beside each point with the load. It prints one row per point and the error
# distribution, and writes cluster.csv into the output folder. Needs root (namespaces),
# iproute2 and the tbf qdisc.
#
# usage: scripts/experiments/cluster.sh [OPTIONS]
#   --grid NAME      main (the validation grid, ~12 min on 2 cores), large (16 to 64 workers,
#                    up to 5 Gbit/s, ~6 min), heldout (one point not
#                    used for tuning: the ctest's), smoke (one tiny point) (default main)
#   --points FILE    a grid of your own: one point a line, "model W L S wlink slink groups
#                    order compute_scale iterations" (groups on|off, order tao|fifo)
#   --out DIR        output folder (default runs/cluster-DATE)
#   --bin DIR        binaries (default build/bin)
#   --max-error X    exit 1 when a point's |error| exceeds X (a fraction; default: never)
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
grid=main
points=""
out=""
bin="$here/build/bin"
max_error=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    --grid) grid=$2; shift 2 ;;
    --points) points=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --max-error) max_error=$2; shift 2 ;;
    *) echo "cluster.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

# model W L S worker-link server-link groups order compute-scale iterations
main_grid() {
  cat <<'EOF'
seq32 2 1 1 1gbit 1gbit off tao 1 6
seq32 4 2 1 1gbit 1gbit off fifo 1 5
seq32 4 2 2 1gbit 1gbit on tao 1 6
seq32 4 1 2 500mbit 500mbit off tao 1 5
resnet50 2 1 1 1gbit 1gbit off tao 1 6
resnet50 2 1 2 1gbit 1gbit off tao 1 6
resnet50 4 2 1 1gbit 1gbit on tao 1 6
resnet50 4 2 2 1gbit 1gbit off tao 1 5
resnet50 4 1 2 1gbit 1gbit off fifo 1 5
resnet50 8 4 2 1gbit 1gbit on tao 1 6
resnet50 4 2 2 250mbit 250mbit on tao 1 5
resnet50 4 2 1 500mbit 1gbit on tao 1 6
resnet50 2 1 1 1gbit 1gbit off tao 10 5
transformer 2 1 1 1gbit 1gbit off tao 1 6
transformer 4 2 2 1gbit 1gbit on tao 1 6
transformer 4 2 1 1gbit 1gbit off fifo 1 5
transformer 8 2 2 1gbit 1gbit on tao 1 5
transformer 6 2 3 500mbit 500mbit on tao 1 5
transformer 4 2 2 1gbit 1gbit on tao 20 5
vgg16 2 1 1 1gbit 1gbit off tao 1 5
vgg16 4 2 2 1gbit 1gbit on tao 1 5
EOF
}
# 16 to 64 workers, 4 to 8 worker and server hosts, 250 Mbit/s to 5 Gbit/s (~6 min on 2
# cores): where the emulated cluster's kernel and CPU work (every host's TCP, sums and
# reduces on the VM's 2 cores) outgrows the machine, the report's cores column says so
large_grid() {
  cat <<'EOF'
resnet50 16 4 4 1gbit 1gbit on tao 4 5
resnet50 16 8 2 1gbit 1gbit on tao 4 5
transformer 16 4 4 2500mbit 2500mbit on tao 4 5
transformer 32 8 4 1gbit 1gbit on tao 4 5
resnet50 32 4 8 1gbit 1gbit on tao 4 5
vgg16 16 8 2 2500mbit 2500mbit on tao 1 4
seq32 32 8 4 5gbit 5gbit on tao 4 5
resnet50 64 8 8 1gbit 1gbit on tao 4 4
transformer 64 8 8 2500mbit 2500mbit on tao 4 4
resnet50 16 4 4 250mbit 250mbit on tao 1 4
EOF
}
heldout_grid() { echo "transformer 4 2 2 500mbit 500mbit on tao 1 5"; }
smoke_grid() { echo "seq32 2 1 1 1gbit 1gbit off tao 1 4"; }

if [ -z "$points" ]; then
  case $grid in
    main|large|heldout|smoke) points=$(mktemp); "${grid}_grid" > "$points"; tmp_points=$points ;;
    *) echo "cluster.sh: unknown grid $grid" >&2; exit 2 ;;
  esac
fi
[ -r "$points" ] || { echo "cluster.sh: cannot read $points" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "cluster.sh: needs root for the network namespaces" >&2; exit 77; }
command -v ip >/dev/null && command -v tc >/dev/null ||
  { echo "cluster.sh: needs ip and tc (iproute2)" >&2; exit 77; }
for b in ordo-scheduler ordo-server ordo-worker ordo-plan; do
  [ -x "$bin/$b" ] || { echo "cluster.sh: $bin/$b is not built (scripts/build.sh)" >&2; exit 2; }
done
[ -n "$out" ] || out="$here/runs/cluster-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out/runs"
csv="$out/cluster.csv"
echo "model,workers,per_host,server_hosts,worker_link,server_link,groups,order,compute_scale,predicted_ms,bound_ms,limit,measured_ms,error,compute_ms,worker_tx_mb,predicted_worker_mb,server_tx_mb,predicted_server_mb,load,cores" > "$csv"

tag="ocl$$"
net=10.215.$(( $$ % 200 + 20 ))
sw="$tag-sw"
hosts=()
pids=()
teardown() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for h in "${hosts[@]}"; do ip netns del "$tag-$h" 2>/dev/null || true; done
  ip netns del "$sw" 2>/dev/null || true
  [ -n "${tmp_points:-}" ] && rm -f "$tmp_points"
  true
}
trap teardown EXIT
ip netns add "$sw" || { echo "cluster.sh: cannot create a network namespace" >&2; exit 77; }
ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set br0 up ||
  { echo "cluster.sh: no bridge support in this kernel" >&2; exit 77; }
declare -A addr made
next_ip=1

# host NAME RATE: make (once) the host's namespace and its veth, and shape both ends to RATE
host() {
  local h=$1 rate=$2 ns="$tag-$1"
  if [ -z "${made[$h]:-}" ]; then
    ip netns add "$ns"
    ip link add "$tag$h" type veth peer name "${tag}b$h"
    ip link set "$tag$h" netns "$ns"
    ip link set "${tag}b$h" netns "$sw"
    ip -n "$sw" link set "${tag}b$h" master br0
    ip -n "$sw" link set "${tag}b$h" up
    addr[$h]="$net.$next_ip"
    next_ip=$((next_ip + 1))
    ip -n "$ns" addr add "${addr[$h]}/24" dev "$tag$h"
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "$tag$h" up
    hosts+=("$h")
    made[$h]=1
  fi
  ip netns exec "$ns" tc qdisc replace dev "$tag$h" root tbf rate "$rate" burst 256kb \
    latency 50ms || { echo "cluster.sh: the kernel lacks the tbf qdisc" >&2; exit 77; }
  ip netns exec "$sw" tc qdisc replace dev "${tag}b$h" root tbf rate "$rate" burst 256kb \
    latency 50ms
}

# children_cpu: CPU seconds (user + system) of this shell's children waited for so far (the
# daemons; read from /proc: a $(...) subshell's own `times` would not see them)
children_cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f\n", ($16 + $17) / hz }' /proc/$$/stat; }

tx_bytes() { ip -n "$tag-$1" -s -j link show dev "$tag$1" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["tx"]["bytes"])'; }

# run_point: one grid point (the fields of one line), appends a row to the CSV
run_point() {
  local model=$1 W=$2 L=$3 S=$4 wl=$5 sl=$6 groups=$7 order=$8 cs=$9 iters=${10}
  local H=$((W / L)) name="$1-w$2-l$3-s$4-$5-$6-$7-$8-x$9" dir plan
  dir="$out/runs/$name"
  mkdir -p "$dir"
  local mfile="$here/conf/models/$model.json"
  plan=$("$bin/ordo-plan" cluster --json --workers "$W" --workers-per-host "$L" \
    --server-hosts "$S" --worker-link "$wl" --server-link "$sl" --compression none \
    --groups "$groups" --order "$order" --compute-scale "$cs" "$mfile")
  echo "$plan" > "$dir/plan.json"
  local slice credit
  slice=$(echo "$plan" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ps"]["slice_bytes"])')
  credit=$(echo "$plan" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ps"]["credit_bytes"])')
  local h s
  for ((h = 0; h < H; h++)); do host "h$h" "$wl"; done
  for ((s = 0; s < S; s++)); do host "s$s" "$sl"; done
  local vflags=(--intra.backend=none --cluster.local_size=1)
  [ "$groups" = on ] && vflags=(--intra.backend=shm "--cluster.local_size=$L")
  local common=(--model.trainer=profile "--model.file=$mfile" --model.compute=emulate
    "--model.compute_scale=$cs" "--model.iterations=$iters" --model.warmup=2
    "--cluster.workers=$W" "--cluster.servers=$S" "--order.policy=$order"
    "--order.segment_bytes=$slice" "--order.credit_bytes=$credit"
    "--order.plan_bandwidth=$wl" --net.bandwidth=0 --fault.timeout_ms=120000
    --fault.heartbeat_ms=1000 --output.progress_every=0 "--output.dir=$out/runs"
    "--output.run=$name" "${vflags[@]}")
  local load tx0=() tx1=() i
  load=$(cut -d' ' -f1 /proc/loadavg)
  for h in "${hosts[@]}"; do tx0+=("$(tx_bytes "$h")"); done
  local ep="" p st=0 t0 cpu0 cpu1
  t0=$(date +%s.%N)
  cpu0=$(children_cpu)
  pids=()
  ip netns exec "$tag-s0" "$bin/ordo-scheduler" "${common[@]}" \
    "--cluster.scheduler=tcp://${addr[s0]}:0" > "$dir/scheduler.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 200); do
    ep=$(grep -m1 '^READY ' "$dir/scheduler.log" 2>/dev/null) && break
    sleep 0.05
  done
  [ -n "$ep" ] || { echo "cluster.sh: $name: the scheduler never became ready" >&2; return 1; }
  ep=${ep#READY }
  for ((s = 0; s < S; s++)); do
    ip netns exec "$tag-s$s" "$bin/ordo-server" "${common[@]}" "--cluster.scheduler=$ep" \
      "--cluster.host=${addr[s$s]}" "--cluster.rank=$s" > "$dir/server$s.log" 2>&1 &
    pids+=($!)
  done
  local w
  for ((w = 0; w < W; w++)); do
    h=h$((w / L))
    ip netns exec "$tag-$h" "$bin/ordo-worker" "${common[@]}" "--cluster.scheduler=$ep" \
      "--cluster.host=${addr[$h]}" "--cluster.rank=$w" > "$dir/worker$w.log" 2>&1 &
    pids+=($!)
  done
  local deadline=$(( ${t0%.*} + 300 ))
  for p in "${pids[@]}"; do
    while kill -0 "$p" 2>/dev/null && [ "$(date +%s)" -lt $deadline ]; do sleep 0.2; done
    if kill -0 "$p" 2>/dev/null; then st=124; break; fi
    wait "$p" || st=$?
    [ $st = 0 ] || break
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
  cpu1=$(children_cpu)
  for h in "${hosts[@]}"; do tx1+=("$(tx_bytes "$h")"); done
  if [ $st != 0 ]; then
    echo "cluster.sh: run $name failed ($st); logs in $dir" >&2
    tail -n 5 "$dir"/*.log >&2
    return 1
  fi
  # bytes a worker host and a server host sent per iteration (h0, s0; the whole run / iters)
  local htx=0 stx=0
  for i in "${!hosts[@]}"; do
    [ "${hosts[$i]}" = h0 ] && htx=$(( tx1[i] - tx0[i] ))
    [ "${hosts[$i]}" = s0 ] && stx=$(( tx1[i] - tx0[i] ))
  done
  local wall cores
  wall=$(python3 -c "import time; print('%.1f' % (time.time() - $t0))")
  cores=$(python3 -c "print('%.2f' % (($cpu1 - $cpu0) / $wall))")
  python3 - "$dir" "$csv" "$iters" "$htx" "$stx" "$load,$cores" \
    "$model,$W,$L,$S,$wl,$sl,$groups,$order,$cs" "$wall" <<'EOF'
import json, sys
d, csv, iters, htx, stx, load, key, secs = sys.argv[1:9]
plan = json.load(open(d + "/plan.json"))["ps"]
summ = json.load(open(d + "/summary.json"))
lines = [json.loads(l) for l in open(d + "/metrics.jsonl") if l.strip()]
last = max(x["iter"] for x in lines)
# the steady state: not the warm-up (workers start at different times), not the last iteration
# (nothing follows it: with pulls at the start it ends up to 40 % shorter)
steady = [x for x in lines if summ["warmup"] <= x["iter"] < last]
steps = sorted(x["step_ms"] for x in steady)
meas = steps[len(steps) // 2] if len(steps) % 2 else sum(steps[len(steps) // 2 - 1:][:2]) / 2
comp = sorted(x["compute_ms"] for x in steady)[len(steady) // 2]
err = (plan["step_ms"] - meas) / meas
it = int(iters)
row = [key, "%.1f" % plan["step_ms"], "%.1f" % plan["bound_ms"], plan["limit"],
       "%.1f" % meas, "%.4f" % err, "%.1f" % comp, "%.1f" % (int(htx) / it / 1e6),
       "%.1f" % (plan["worker_link_bytes_out"] / 1e6), "%.1f" % (int(stx) / it / 1e6),
       "%.1f" % (plan["server_link_bytes_out"] / 1e6), load]
open(csv, "a").write(",".join(row) + "\n")
print("%-52s predicted %8.1f ms  measured %8.1f ms  error %+6.1f %%  (%s s, load, cores %s)"
      % (key, plan["step_ms"], meas, 100 * err, secs, load), flush=True)
EOF
}

echo "cluster: grid $grid; output $out; $(uptime)"
n=0
while read -r line <&3; do
  [ -z "$line" ] || [ "${line:0:1}" = "#" ] && continue
  # shellcheck disable=SC2086
  run_point $line || true
  n=$((n + 1))
done 3< "$points"
python3 "$here/scripts/experiments/cluster_report.py" "$csv" ${max_error:+--max-error "$max_error"}
