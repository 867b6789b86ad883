#!/usr/bin/env bash
# torch.sh: the PyTorch experiments of ordo.torch (docs/torch.md; results in
# docs/results/torch.md). Two parts, each worker a scripts/experiments/torch_worker.py process:
#  ordering  TicTac's set-up with real models: 1 server and 4 workers on this host, the server's
#            egress emulated ([net] bandwidth), each model's batch chosen so that the forward
#            pass (measured here, the workers sharing the cores) takes --compute-ratio of the
#            time the shared link needs for the 4 workers' pulls; per policy the forward pass
#            is run with ordered pulls and gated modules (torch_worker.py forward).
#  ddp       ordo.torch against PyTorch DDP (gloo): network namespaces s0, s1 (the servers; the
#            scheduler on s0) and h0, h1 (2 workers each; --hosts) on a bridge, every host's link
#            shaped by tbf to --ddp-bandwidth each way; ordo.torch's DistributedOptimizer in
#            gradients and server mode, ordering off (policy none) and on (tao, planned from
#            the model for the shaped rate, [order] plan_bandwidth; enforced strict, and
#            greedy), against DistributedDataParallel with the
#            same per-worker batch. A variant ending in -groups runs ordo.torch in host groups
#            ([cluster] local_size = 2, [intra] backend = shm: one owner per key and host
#            talks to the servers; -groups-nooverlap: [intra] overlap = false, the next
#            forward pass waits for every value). Every worker writes its host's interface byte counts over
#            the measured iterations (netRANK.json; torch_report.py: host_tx/rx_models).
#            Needs root, iproute2, the bridge and tbf (otherwise the part is skipped).
# torch_report.py then writes torch-ordering.csv, torch-ddp.csv, the gnuplot plots and
# torch-tables.md into the output folder.
#
# usage: scripts/experiments/torch.sh [OPTIONS]
#   --parts LIST          ordering,ddp (default both)
#   --models LIST         resnet18,vgg (default both)
#   --policies LIST       ordering part (default none,tio,tao,search)
#   --iterations N        measured iterations per run (default 6 ordering, 10 ddp)
#   --bandwidth RATE      ordering part: the server's emulated egress (default 2gbit)
#   --compute-ratio R     ordering part: forward time / pull time (default 0.5)
#   --batch LIST          ordering part: M=B,... a model's batch per worker instead of the
#                         one the calibration picks (the calibration is noisy on a busy host)
#   --ddp-bandwidth RATE  ddp part: each host's link each way (default 1gbit)
#   --variants LIST       ddp part: ordo-MODE-POLICY[-ENFORCE][-groups[-nooverlap]][-cCODEC] (CODEC:
#                         [push] compression, ':' written '_' and ',' '+': -cbf16, -conebit,
#                         -conebit+pull=delta, -ctopk_0.01; -coktopk_D: Ok-Topk's sparse path,
#                         [push] mode = sparse at density D, Compression.oktopk(), server mode
#                         and flat workers only) and
#                         ddp[-bMB][-bf16|-fp16|-powersgd] (DDP with MB-megabyte buckets, default
#                         25, and a compression comm hook: PowerSGD rank 4 from step 10, error
#                         feedback and warm start), comma-separated
#                         (default the flat ordo variants and ddp)
#   --hosts HxL           ddp part: H worker hosts of L workers (default 2x2)
#   --train-batch LIST    ddp part: samples per worker and step, B or M=B,... per model
#                         (default 16)
#   --target-acc A        ddp part: time to accuracy: every run trains until the test
#                         accuracy reaches A (evaluated every --eval-every steps, default 25),
#                         at most --iterations steps; each worker writes ttaRANK.json
#                         (torch_worker.py; scripts/experiments/tta.sh sums them up)
#   --optimizer sgd|adam  ddp part: the workers' optimizer (default sgd; adam: gradients mode
#                         and DDP only)
#   --lr X                ddp part: SGD's learning rate (default 0.01; momentum 0.9)
#   --init default|he     ddp part: the model's initialisation (he: He's rule, which SGD
#                         needs to train the VGG-style net from the start)
#   --width X             vgg's width factor (default 1)
#   --image PX            image side, Fashion-MNIST resized (default 28)
#   --smoke               a minute-long check that everything runs (tiny vgg, 2 iterations,
#                         policies none,tao; ddp part only as root)
#   --out DIR             output folder (default runs/torch-DATE)
#   --bin DIR             binaries (default build/bin, or $ORDO_BIN_DIR)
#   --report-only         only (re)write the CSVs, plots and tables from DIR's runs
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
parts="ordering,ddp"
models="resnet18,vgg"
policies="none,tio,tao,search"
iters=""
bandwidth=2gbit
ratio=0.5
fixed_batch=""
bin="${ORDO_BIN_DIR:-$here/build/bin}"
ddp_bw=1gbit
tbatch=16
ddp_variants=""
whosts=2
per_host=2
width=1
image=28
smoke=0
out=""
report_only=0
tta=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    --parts) parts=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --policies) policies=$2; shift 2 ;;
    --iterations) iters=$2; shift 2 ;;
    --bandwidth) bandwidth=$2; shift 2 ;;
    --compute-ratio) ratio=$2; shift 2 ;;
    --batch) fixed_batch=$2; shift 2 ;;
    --ddp-bandwidth) ddp_bw=$2; shift 2 ;;
    --train-batch) tbatch=$2; shift 2 ;;
    --variants) ddp_variants=${2//,/ }; shift 2 ;;
    --hosts) whosts=${2%x*}; per_host=${2#*x}; shift 2 ;;
    --target-acc) tta+=(--target-acc "$2"); shift 2 ;;
    --eval-every) tta+=(--eval-every "$2"); shift 2 ;;
    --optimizer) tta+=(--optimizer "$2"); shift 2 ;;
    --lr) tta+=(--lr "$2"); shift 2 ;;
    --init) tta+=(--init "$2"); shift 2 ;;
    --width) width=$2; shift 2 ;;
    --image) image=$2; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --report-only) report_only=1; shift ;;
    *) echo "torch.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ $smoke = 1 ]; then
  models=vgg; policies=none,tao; width=0.125; iters=${iters:-2}; tbatch=4
fi
[ -n "$out" ] || out="$here/runs/torch-$(date +%Y%m%d-%H%M%S)"
py="${ORDO_PYTHON:-$here/.venv/bin/python}"
"$py" -c 'import torch, torchvision' 2>/dev/null ||
  { echo "torch.sh: no torch and torchvision in $py (scripts/setup-python.sh)" >&2; exit 77; }
for b in ordo-plan ordo-scheduler ordo-server; do
  [ -x "$bin/$b" ] || { echo "torch.sh: $bin/$b is not built (scripts/build.sh)" >&2; exit 2; }
done
# the checkout's own binding and library (a .venv shared between worktrees has another's)
export PYTHONPATH="$here/python${PYTHONPATH:+:$PYTHONPATH}"
export ORDO_LIBRARY="${ORDO_LIBRARY:-$here/build/client/libordo.so.0}"
worker="$here/scripts/experiments/torch_worker.py"
mkdir -p "$out/runs"
log="$out/torch.log"
wflags=(--width "$width" --image "$image")
[ $smoke = 1 ] && wflags+=(--synthetic)

rate_bps() { # rate_bps 2gbit -> 2000000000
  "$py" -c 'import re,sys; n,u=re.fullmatch(r"([0-9.]+)([a-z]*)",sys.argv[1]).groups(); print(int(float(n)*{"kbit":1e3,"mbit":1e6,"gbit":1e9,"tbit":1e12}[u]))' "$1"
}

ordering_part() {
  local n=${iters:-6} workers=4 cores
  cores=$(nproc)
  echo "torch ordering: models $models; policies $policies; 4 workers, 1 server, $bandwidth;" \
       "forward / pull = $ratio; $n iterations (+1 warm-up); output $out" | tee -a "$log"
  : > "$out/batches.txt"
  for m in ${models//,/ }; do
    # the batch: forward (shared cores: workers / cores times one process's) = ratio x pull
    local cal batch
    cal=$("$py" "$worker" calibrate --model "$m" --batch 32 "${wflags[@]}" --threads 1)
    batch=$("$py" - "$cal" "$(rate_bps "$bandwidth")" "$ratio" "$workers" "$cores" "$smoke" <<'EOF'
import json, sys
c = json.loads(sys.argv[1])
bps, ratio, workers, cores, smoke = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), \
    int(sys.argv[5]), sys.argv[6] == "1"
pull_ms = workers * c["bytes"] * 8 / bps * 1e3
share = max(1.0, workers / cores)
b = ratio * pull_ms / (c["fwd_ms_per_sample"] * share)
print(4 if smoke else max(8, min(1024, int(round(b / 8)) * 8)))
EOF
)
    for mb in ${fixed_batch//,/ }; do
      [ "${mb%%=*}" = "$m" ] && batch=${mb#*=}
    done
    echo "$m $batch $cal" >> "$out/batches.txt"
    for pol in ${policies//,/ }; do
      local run="ordering-$m-$pol" dir t0
      dir="$out/runs/$run"
      rm -rf "$dir" && mkdir -p "$dir"
      t0=$(date +%s)
      if ! (cd "$here" && timeout 900 scripts/ordo-launch conf/experiments/torch.ini \
          --bin "$bin" "--cluster.workers=$workers" "--order.policy=$pol" \
          "--net.bandwidth=$bandwidth" "--output.dir=$dir" --output.run=cluster \
          "--worker.command=$py $worker forward --model $m --batch $batch --iterations $n --warmup 1 --policy $pol --out $dir ${wflags[*]}") \
          > "$dir/launch.log" 2>&1; then
        echo "torch.sh: run $run failed; its log: $dir/launch.log" >&2
        tail -n 15 "$dir/launch.log" >&2
        exit 1
      fi
      echo "$(date +%T) $run (batch $batch): $(( $(date +%s) - t0 )) s" | tee -a "$log"
    done
  done
}

ddp_part() {
  local n=${iters:-10} net sw nworkers=$((whosts * per_host))
  tag="otx$$" # global: the EXIT trap's teardown runs after this function's locals are gone
  if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
    echo "torch.sh: the ddp part needs root and iproute2 (ip, tc); skipped" | tee -a "$log"
    return 0
  fi
  net=10.215.$(( $$ % 200 + 20 ))
  sw="$tag-sw"
  hosts=(s0 s1)
  local hh
  for ((hh = 0; hh < whosts; hh++)); do hosts+=("h$hh"); done
  declare -gA addr
  pids=()
  teardown() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for h in "${hosts[@]}"; do ip netns del "$tag-$h" 2>/dev/null || true; done
    ip netns del "$sw" 2>/dev/null || true
  }
  trap teardown EXIT
  if ! ip netns add "$sw" 2>/dev/null || ! ip -n "$sw" link add br0 type bridge 2>/dev/null; then
    echo "torch.sh: cannot make network namespaces and a bridge; the ddp part is skipped" |
      tee -a "$log"
    return 0
  fi
  ip -n "$sw" link set br0 up
  local i=1 h ns
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
    if ! ip netns exec "$ns" tc qdisc add dev "$tag$h" root tbf rate "$ddp_bw" burst 256kb \
        latency 50ms 2>/dev/null; then
      echo "torch.sh: the kernel lacks the tbf qdisc; the ddp part is skipped" | tee -a "$log"
      return 0
    fi
    ip netns exec "$sw" tc qdisc add dev "${tag}b$h" root tbf rate "$ddp_bw" burst 256kb \
      latency 50ms
    i=$((i + 1))
  done
  local variants="ordo-gradients-none ordo-gradients-tao ordo-gradients-tao-greedy"
  variants+=" ordo-server-none ordo-server-tao ordo-server-tao-greedy ddp"
  [ $smoke = 1 ] && variants="ordo-gradients-tao ordo-server-tao-greedy-groups ddp"
  [ -n "$ddp_variants" ] && variants=$ddp_variants
  # ordo's planned runs profile 6 steps before the plan: every run leaves 7 out
  local warm=7
  echo "torch ddp: hosts s0 s1 (servers) and $whosts worker hosts of $per_host workers on a bridge, each link" \
       "$ddp_bw each way; models $models; batch $tbatch per worker; $n iterations (+$warm" \
       "warm-up); variants $variants" | tee -a "$log"
  for m in ${models//,/ }; do
    local mb=$tbatch e
    for e in ${tbatch//,/ }; do
      case $e in
        "$m"=*) mb=${e#*=} ;;
        *=*) ;;
        *) [ "$mb" = "$tbatch" ] && mb=$e ;;
      esac
    done
    case $mb in *=*) mb=16 ;; esac
    for v in $variants; do
      local run="ddp-$m-$v" dir t0 st=0 p ep=""
      dir="$out/runs/$run"
      rm -rf "$dir" && mkdir -p "$dir"
      t0=$(date +%s)
      local wargs=(--model "$m" --batch "$mb" --iterations "$n" --warmup $warm --out "$dir"
                   "${wflags[@]}" "${tta[@]}")
      pids=()
      if [ "${v%%-*}" = ddp ]; then
        local bucket=25 hook=none dv=$v
        case $dv in *-bf16|*-fp16|*-powersgd) hook=${dv##*-}; dv=${dv%-*} ;; esac
        case $dv in ddp-b*) bucket=${dv#ddp-b} ;; esac
        for ((w = 0; w < nworkers; w++)); do
          h=h$((w / per_host))
          ip netns exec "$tag-$h" env MASTER_ADDR="${addr[h0]}" MASTER_PORT=29511 RANK=$w \
            WORLD_SIZE=$nworkers GLOO_SOCKET_IFNAME="$tag$h" ORDO_LOCAL_SIZE=$per_host \
            "$py" "$worker" ddp "${wargs[@]}" \
            --bucket-mb "$bucket" --hook "$hook" > "$dir/worker$w.log" 2>&1 &
          pids+=($!)
        done
      else
        local mode pol enf groups=1 backend=none overlap=true vv=$v codec=none
        local pmode=dense density=0.01 wcomp=none
        case $vv in *-c*) codec=${vv##*-c}; vv=${vv%-c*}; codec=${codec//_/:}; codec=${codec//+/,} ;; esac
        case $codec in # Ok-Topk: the sparse path compresses; the tensors are declared plain
          oktopk*) pmode=sparse; wcomp=oktopk; [ "$codec" = oktopk ] || density=${codec#oktopk:}
                   codec=none ;;
        esac
        case $vv in *-groups-nooverlap) overlap=false; vv=${vv%-nooverlap} ;; esac
        case $vv in *-groups) groups=$per_host; backend=shm; vv=${vv%-groups} ;; esac
        mode=$(echo "$vv" | cut -d- -f2)
        pol=$(echo "$vv" | cut -d- -f3)
        enf=$(echo "$vv" | cut -d- -f4)
        enf=${enf:-strict}
        local common=(-c "$here/conf/experiments/torch.ini" --cluster.servers=2 "--cluster.workers=$nworkers"
                      --net.bandwidth=0 --net.latency_us=0 "--order.policy=$pol"
                      "--order.enforce=$enf" "--order.plan_bandwidth=$ddp_bw"
                      "--cluster.local_size=$groups"
                      "--intra.backend=$backend" "--intra.overlap=$overlap"
                      "--push.compression=$codec" "--push.mode=$pmode" "--push.density=$density"
                      "--output.dir=$dir" --output.run=cluster)
        ip netns exec "$tag-s0" "$bin/ordo-scheduler" "${common[@]}" \
          "--cluster.scheduler=tcp://${addr[s0]}:0" > "$dir/scheduler.log" 2>&1 &
        pids+=($!)
        for _ in $(seq 1 400); do
          ep=$(grep -m1 '^READY ' "$dir/scheduler.log" 2>/dev/null) && break
          sleep 0.05
        done
        [ -n "$ep" ] || { echo "torch.sh: $run: the scheduler never became ready" >&2; exit 1; }
        ep=${ep#READY }
        for s in 0 1; do
          ip netns exec "$tag-s$s" "$bin/ordo-server" "${common[@]}" "--cluster.scheduler=$ep" \
            "--cluster.host=${addr[s$s]}" "--cluster.rank=$s" > "$dir/server$s.log" 2>&1 &
          pids+=($!)
        done
        local plan=()
        [ "$pol" != none ] && plan=(--plan)
        for ((w = 0; w < nworkers; w++)); do
          h=h$((w / per_host))
          ip netns exec "$tag-$h" env ORDO_CONF="$here/conf/experiments/torch.ini" \
            ORDO_CLUSTER_SCHEDULER="$ep" ORDO_CLUSTER_RANK=$w ORDO_CLUSTER_HOST="${addr[$h]}" \
            ORDO_CLUSTER_SERVERS=2 ORDO_CLUSTER_WORKERS=$nworkers ORDO_NET_BANDWIDTH=0 \
            ORDO_NET_LATENCY_US=0 ORDO_ORDER_POLICY="$pol" ORDO_ORDER_ENFORCE="$enf" ORDO_ORDER_PLAN_BANDWIDTH="$ddp_bw" \
            ORDO_CLUSTER_LOCAL_SIZE=$groups ORDO_INTRA_BACKEND=$backend ORDO_INTRA_OVERLAP=$overlap \
            ORDO_PUSH_COMPRESSION="$codec" ORDO_PUSH_MODE=$pmode ORDO_PUSH_DENSITY=$density \
            ORDO_LOCAL_RANK=$((w % per_host)) \
            ORDO_LOCAL_SIZE=$per_host "$py" "$worker" train --mode "$mode" "${plan[@]}" "${wargs[@]}" \
            --compression $wcomp \
            > "$dir/worker$w.log" 2>&1 &
          pids+=($!)
        done
      fi
      local deadline=$(( $(date +%s) + 900 ))
      for p in "${pids[@]}"; do
        while kill -0 "$p" 2>/dev/null && [ "$(date +%s)" -lt $deadline ]; do sleep 0.2; done
        if kill -0 "$p" 2>/dev/null; then st=124; break; fi
        wait "$p" || st=$?
        [ $st = 0 ] || break
      done
      for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
      wait 2>/dev/null || true
      pids=()
      if [ $st != 0 ]; then
        echo "torch.sh: run $run failed ($st); logs in $dir" >&2
        tail -n 8 "$dir"/*.log >&2
        exit 1
      fi
      local reached=""
      [ -f "$dir/tta0.json" ] && reached=" $("$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); print("accuracy %.4f after %d steps, %.1f s (%s)" % (d["accuracy"], d["steps"], d["wall_s"], "reached" if d["reached"] else "NOT reached"))' "$dir/tta0.json")"
      echo "$(date +%T) $run: $(( $(date +%s) - t0 )) s$reached" | tee -a "$log"
    done
  done
  teardown
  trap - EXIT
}

if [ $report_only = 0 ]; then
  for part in ${parts//,/ }; do
    case $part in
      ordering) ordering_part ;;
      ddp) ddp_part ;;
      *) echo "torch.sh: unknown part $part (ordering, ddp)" >&2; exit 2 ;;
    esac
  done
fi
"$py" "$here/scripts/experiments/torch_report.py" --out "$out" --bin "$bin" \
  --models "$models" --policies "$policies" --bandwidth "$bandwidth" --workers 4 \
  --ddp-workers $((whosts * per_host))
