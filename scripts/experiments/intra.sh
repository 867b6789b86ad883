#!/usr/bin/env bash
# intra.sh: intra-host aggregation on a real shaped network (issue 20, docs/intra.md). Two
# worker hosts of two workers each and one or two server hosts are network namespaces, each
# joined to a bridge (in a namespace of its own) by a veth whose two ends are shaped with tbf
# to --bandwidth, so every host has its own link of that rate each way. The scheduler runs on
# server host 0. Each model runs in three variants:
#   flat     every worker pushes and pulls the whole model (intra.backend = none)
#   hier     the two workers of a host sum inside the host (intra.backend = shm,
#            local_size = 2) and each pushes and pulls half of it; the forward pass starts
#            once every all-gather is done (intra.overlap = false)
#   overlap  the same, each forward op waiting only for its own parameters' all-gather (DeAR)
# Models: conf/models/M.json profiles with emulated compute (vgg16, resnet50), and the C cnn
# (real compute on Fashion-MNIST). Per run the script records the bytes every host's link
# carried (ip -s link in the namespaces); intra_report.py then writes intra.csv, gnuplot plots
# and intra-table.md into the output folder. Needs root (namespaces), iproute2 and the tbf qdisc.
#
# usage: scripts/experiments/intra.sh [OPTIONS]
#   --models LIST      comma list of profiles (conf/models/M.json) and cnn
#                      (default vgg16,resnet50,cnn)
#   --variants LIST    comma list of flat,hier,overlap (default all three)
#   --scenarios LIST   none, and/or x2: worker 1 computes 2 times slower (default none)
#   --iterations N     iterations per run, warm-up included (default: vgg16 3, other
#                      profiles 6, cnn 30); the first (profiles) or two (cnn) are warm-up
#   --servers N        server hosts, one server each: 1 or 2 (default 2)
#   --bandwidth RATE   each host's link, each way, tc style (default 1gbit)
#   --compute-scale X  the profiles' op times x X (default 1: the profiled GPU times); a
#                      larger X gives the forward pass time to hide all-gathers behind
#   --smoke            a tiny check that the script works: a 4 MiB chain profile, 3
#                      iterations, every variant, output in a temporary folder unless --out
#   --out DIR          output folder (default runs/intra-DATE)
#   --bin DIR          binaries (default build/bin)
#   --report-only      only (re)write the CSV, plots and table of DIR's runs
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
models="vgg16,resnet50,cnn"
variants="flat,hier,overlap"
scenarios="none"
iters=""
servers=2
bandwidth=1gbit
compute_scale=1
smoke=0
out=""
bin="$here/build/bin"
report_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --models) models=$2; shift 2 ;;
    --variants) variants=$2; shift 2 ;;
    --scenarios) scenarios=$2; shift 2 ;;
    --iterations) iters=$2; shift 2 ;;
    --servers) servers=$2; shift 2 ;;
    --bandwidth) bandwidth=$2; shift 2 ;;
    --compute-scale) compute_scale=$2; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --report-only) report_only=1; shift ;;
    *) echo "intra.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$iters" ] && { [[ "$iters" =~ ^[1-9][0-9]*$ ]] && [ "$iters" -ge 2 ] ||
  { echo "intra.sh: --iterations must be an integer >= 2" >&2; exit 2; }; }
[[ "$compute_scale" =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
  { echo "intra.sh: --compute-scale must be a number like 1 or 2.5" >&2; exit 2; }
[[ "$servers" =~ ^[12]$ ]] || { echo "intra.sh: --servers must be 1 or 2" >&2; exit 2; }
if [ $smoke = 1 ]; then
  models=chain; iters=${iters:-3}
  [ -n "$out" ] || { out=$(mktemp -d /tmp/ordo-intra-smoke.XXXXXX); smoke_tmp=$out; }
fi
[ -n "$out" ] || out="$here/runs/intra-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out/runs"
log="$out/intra.log"

if [ $report_only = 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "intra.sh: needs root for the network namespaces" >&2; exit 77; }
  command -v ip >/dev/null && command -v tc >/dev/null ||
    { echo "intra.sh: needs ip and tc (iproute2)" >&2; exit 77; }
  for b in ordo-scheduler ordo-server ordo-worker; do
    [ -x "$bin/$b" ] || { echo "intra.sh: $bin/$b is not built (scripts/build.sh)" >&2; exit 2; }
  done

  # ---- the hosts: s0 (scheduler, server 0), s1 (server 1), h0 (workers 0, 1), h1 (2, 3) ----
  tag="oix$$"
  net=10.214.$(( $$ % 200 + 20 ))
  hosts=(s0 h0 h1)
  [ "$servers" = 2 ] && hosts=(s0 s1 h0 h1)
  declare -A addr
  sw="$tag-sw"
  pids=()
  teardown() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for h in "${hosts[@]}"; do ip netns del "$tag-$h" 2>/dev/null || true; done
    ip netns del "$sw" 2>/dev/null || true
    [ -n "${smoke_tmp:-}" ] && [ "${KEEP:-0}" != 1 ] && rm -rf "$smoke_tmp"
    true
  }
  trap teardown EXIT
  ip netns add "$sw" || { echo "intra.sh: cannot create a network namespace" >&2; exit 77; }
  ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set br0 up ||
    { echo "intra.sh: no bridge support in this kernel" >&2; exit 77; }
  i=1
  for h in "${hosts[@]}"; do
    ns="$tag-$h"
    ip netns add "$ns"
    ip link add "$tag$h" type veth peer name "${tag}b$h"
    ip link set "$tag$h" netns "$ns"
    ip link set "${tag}b$h" netns "$sw"
    ip -n "$sw" link set "${tag}b$h" master br0
    ip -n "$sw" link set "${tag}b$h" up
    addr[$h]="$net.$i"
    ip -n "$ns" addr add "$net.$i/24" dev "$tag$h"
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "$tag$h" up
    # the host's link each way: its egress on its end, its ingress on the bridge's end
    ip netns exec "$ns" tc qdisc add dev "$tag$h" root tbf rate "$bandwidth" burst 256kb \
      latency 50ms || { echo "intra.sh: the kernel lacks the tbf qdisc" >&2; exit 77; }
    ip netns exec "$sw" tc qdisc add dev "${tag}b$h" root tbf rate "$bandwidth" burst 256kb \
      latency 50ms
    i=$((i + 1))
  done
  echo "intra: hosts ${hosts[*]} on a bridge, each link $bandwidth each way; $servers server" \
       "host(s); models $models (profiles' compute x $compute_scale); variants $variants;" \
       "scenarios $scenarios; output $out" | tee -a "$log"

  # bytes every host's link carried so far, as JSON {host: [tx, rx]}
  link_bytes() {
    local first=1
    printf '{'
    for h in "${hosts[@]}"; do
      [ $first = 1 ] || printf ','
      first=0
      ip -n "$tag-$h" -s -j link show dev "$tag$h" | python3 -c '
import json, sys
s = json.load(sys.stdin)[0]["stats64"]
print("\"%s\": [%d, %d]" % (sys.argv[1], s["tx"]["bytes"], s["rx"]["bytes"]), end="")' "$h"
    done
    printf '}'
  }

  # a 16-layer chain of 256 KiB layers for --smoke
  if [ $smoke = 1 ]; then
    python3 - "$out/chain.json" <<'EOF'
import json, sys
n = 16
json.dump({"format": "ordo-model/1", "name": "chain", "batch": 1, "dtype": "float32",
           "params": [{"name": "w%d" % i, "shape": [65536]} for i in range(n)],
           "ops": [{"name": "l%d" % i, "inputs": ["l%d" % (i - 1)] if i else [],
                    "params": ["w%d" % i], "fwd_us": 500.0, "bwd_us": 1000.0}
                   for i in range(n)]}, open(sys.argv[1], "w"))
EOF
  fi

  # one run: scheduler and servers on the server hosts, workers 2h and 2h+1 on host h
  run_one() {
    local name=$1 timeout_s=$2; shift 2
    local dir="$out/runs/$name" common=("$@") ep="" p st=0
    mkdir -p "$dir"
    rm -f "$dir"/*.log
    local before; before=$(link_bytes)
    pids=()
    ip netns exec "$tag-s0" "$bin/ordo-scheduler" "${common[@]}" \
      "--cluster.scheduler=tcp://${addr[s0]}:0" > "$dir/scheduler.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 1 200); do
      ep=$(grep -m1 '^READY ' "$dir/scheduler.log" 2>/dev/null) && break
      sleep 0.05
    done
    [ -n "$ep" ] || { echo "intra.sh: $name: the scheduler never became ready" >&2; return 1; }
    ep=${ep#READY }
    for s in $(seq 0 $((servers - 1))); do
      ip netns exec "$tag-s$s" "$bin/ordo-server" "${common[@]}" "--cluster.scheduler=$ep" \
        "--cluster.host=${addr[s$s]}" "--cluster.rank=$s" > "$dir/server$s.log" 2>&1 &
      pids+=($!)
    done
    for w in 0 1 2 3; do
      local h=h$((w / 2))
      ip netns exec "$tag-$h" "$bin/ordo-worker" "${common[@]}" "--cluster.scheduler=$ep" \
        "--cluster.host=${addr[$h]}" "--cluster.rank=$w" > "$dir/worker$w.log" 2>&1 &
      pids+=($!)
    done
    local deadline=$(( $(date +%s) + timeout_s ))
    for p in "${pids[@]}"; do
      while kill -0 "$p" 2>/dev/null && [ "$(date +%s)" -lt $deadline ]; do sleep 0.2; done
      if kill -0 "$p" 2>/dev/null; then st=124; break; fi
      wait "$p" || st=$?
      [ $st = 0 ] || break
    done
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    pids=()
    printf '{"before": %s, "after": %s}\n' "$before" "$(link_bytes)" > "$dir/link.json"
    if [ $st != 0 ]; then
      echo "intra.sh: run $name failed ($st); logs in $dir" >&2
      tail -n 5 "$dir"/*.log >&2
      return 1
    fi
  }

  for m in ${models//,/ }; do
    case $m in
      chain)
        n=${iters:-3}; warm=1; tmo=60
        mflags=(--model.trainer=profile "--model.file=$out/chain.json" --model.compute=emulate) ;;
      cnn)
        n=${iters:-30}; warm=2; tmo=300
        mflags=(--model.trainer=cnn --model.compute=cpu --model.batch=64 --model.epochs=0
                --model.seed=1 --optimizer.lr=0.02 --optimizer.momentum=0.9) ;;
      *)
        [ -f "$here/conf/models/$m.json" ] ||
          { echo "intra.sh: no profile conf/models/$m.json" >&2; exit 2; }
        if [ "$m" = vgg16 ]; then n=${iters:-3}; else n=${iters:-6}; fi
        warm=1; tmo=$(( 60 + n * 40 * (${compute_scale%.*} + 1) ))
        mflags=(--model.trainer=profile "--model.file=$here/conf/models/$m.json"
                --model.compute=emulate "--model.compute_scale=$compute_scale") ;;
    esac
    for sc in ${scenarios//,/ }; do
      case $sc in
        none) sflags=() ;;
        x2) sflags=(--straggle.ranks=1 --straggle.slowdown=2) ;;
        *) echo "intra.sh: unknown scenario $sc" >&2; exit 2 ;;
      esac
      for v in ${variants//,/ }; do
        case $v in
          flat) vflags=(--intra.backend=none --cluster.local_size=1) ;;
          hier) vflags=(--intra.backend=shm --cluster.local_size=2 --intra.overlap=false) ;;
          overlap) vflags=(--intra.backend=shm --cluster.local_size=2 --intra.overlap=true) ;;
          *) echo "intra.sh: unknown variant $v" >&2; exit 2 ;;
        esac
        name="$m-$v-$sc"
        t0=$(date +%s)
        run_one "$name" "$tmo" "${mflags[@]}" "${sflags[@]}" "${vflags[@]}" \
          "--model.iterations=$n" "--model.warmup=$warm" --cluster.workers=4 \
          "--cluster.servers=$servers" --order.policy=tao --net.bandwidth=0 \
          --fault.timeout_ms=60000 --fault.heartbeat_ms=500 --output.progress_every=0 \
          --output.trace=true "--output.dir=$out/runs" "--output.run=$name"
        echo "$(date +%T) $name: $(( $(date +%s) - t0 )) s" | tee -a "$log"
      done
    done
  done
fi
python3 "$here/scripts/experiments/intra_report.py" --out "$out" --models "$models" \
  --variants "$variants" --scenarios "$scenarios" --bandwidth "$bandwidth"
