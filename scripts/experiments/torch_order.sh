#!/usr/bin/env bash
# torch_order.sh: does a transfer order pay in real PyTorch training? ordo.torch workers
# (scripts/experiments/torch_worker.py train, DistributedOptimizer in server mode) on this
# host, every process's egress emulated at each --bandwidths rate ([net] bandwidth), for
# each model and these settings (docs/training-order.md):
#   none_early  the best unordered setting: no order, each value pulled right after its push
#   layer       ByteScheduler's rule: priority = the parameter's place in the model, with the
#               planned defaults (greedy release, early pulls, slices and push credit tuned);
#               it profiles and re-plans like tao (--plan), so its credit is tuned on the same
#               measured compute (the order stays the layers' places)
#   tao         TAO planned from the model's measured profile (ordo.torch profiles the first
#               steps and re-plans: --plan), the same defaults
#   search      the search from TAO's order, the same defaults
# Per run: samples/s over all workers (iterations after the warm-up, which covers the
# profiling steps), the median step, and the scheduler's step model for the planned runs
# (order_step: predicted step and bound, from summary.json). It writes torch-order.csv and
# prints a table with each setting's ratio to none_early.
#
# usage: scripts/experiments/torch_order.sh [OPTIONS]
#   --models LIST       resnet18,vgg (default both; torch_worker.py's models)
#   --bandwidths LIST   emulated link rates (default 500mbit,1gbit,2gbit)
#   --settings LIST     none_early,layer,tao,search (default all)
#   --workers W         default 2;  --servers S  default 1
#   --batch B           samples per worker and step (default 16)
#   --iterations N      measured iterations (default 10; 8 more of warm-up)
#   --width X, --image PX   as torch_worker.py (vgg's width factor; image side)
#   --repeats R         default 1
#   --synthetic         random inputs (no Fashion-MNIST needed)
#   --out DIR           default runs/torch-order-DATE
#   --bin DIR           default build/bin
# The CPU is part of the step: run it on a quiet machine with a core per worker, and read
# ratios of runs made close together (the load average is in the CSV).
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
models=resnet18,vgg
bandwidths=500mbit,1gbit,2gbit
settings=none_early,layer,tao,search
workers=2
servers=1
batch=16
iters=10
warm=8
width=1
image=28
repeats=1
synthetic=0
out=""
bin="${ORDO_BIN_DIR:-$here/build/bin}"
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --models) models=$2; shift 2 ;;
    --bandwidths) bandwidths=$2; shift 2 ;;
    --settings) settings=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --servers) servers=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --iterations) iters=$2; shift 2 ;;
    --width) width=$2; shift 2 ;;
    --image) image=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --synthetic) synthetic=1; shift ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "torch_order.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for v in workers servers batch iters repeats; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || { echo "torch_order.sh: --$v takes a number, not '${!v}'" >&2; exit 2; }
done
py="${ORDO_PYTHON:-$here/.venv/bin/python}"
"$py" -c 'import torch, torchvision' 2>/dev/null ||
  { echo "torch_order.sh: no torch and torchvision in $py (scripts/setup-python.sh)" >&2; exit 77; }
[ -x "$bin/ordo-scheduler" ] || { echo "torch_order.sh: $bin is not built (scripts/build.sh)" >&2; exit 2; }
export PYTHONPATH="$here/python${PYTHONPATH:+:$PYTHONPATH}"
export ORDO_LIBRARY="${ORDO_LIBRARY:-$here/build/client/libordo.so.0}"
out=${out:-$here/runs/torch-order-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
worker="$here/scripts/experiments/torch_worker.py"
wflags="--width $width --image $image"
[ $synthetic = 1 ] && wflags+=" --synthetic"
: > "$out/runs.txt"
for rep in $(seq 1 "$repeats"); do
  for m in ${models//,/ }; do
    for bw in ${bandwidths//,/ }; do
      for st in ${settings//,/ }; do
        case $st in
          none_early) flags=(--order.policy=none --order.pull=early); plan="" ;;
          layer) flags=(--order.policy=layer); plan=--plan ;;
          tao) flags=(--order.policy=tao); plan=--plan ;;
          search) flags=(--order.policy=search); plan=--plan ;;
          *) echo "torch_order.sh: unknown setting $st" >&2; exit 2 ;;
        esac
        run="$m-$bw-$st-$rep"
        dir="$out/$run"
        rm -rf "$dir" && mkdir -p "$dir"
        load=$(cut -d' ' -f1 /proc/loadavg)
        if ! (cd "$here" && timeout 1200 scripts/ordo-launch conf/experiments/torch.ini \
            --bin "$bin" "--cluster.workers=$workers" "--cluster.servers=$servers" \
            "--net.bandwidth=$bw" --net.latency_us=0 --order.enforce=auto "${flags[@]}" \
            "--output.dir=$dir" --output.run=cluster \
            "--worker.command=$py $worker train --mode server $plan --model $m --batch $batch --iterations $iters --warmup $warm --out $dir $wflags") \
            > "$dir/launch.log" 2>&1; then
          echo "torch_order.sh: run $run failed; its log: $dir/launch.log" >&2
          tail -n 12 "$dir/launch.log" >&2
          exit 1
        fi
        echo "$run $m $bw $st $rep $load" >> "$out/runs.txt"
        echo "$(date +%T) $run (load $load)"
      done
    done
  done
done
"$py" - "$out" "$batch" <<'PY'
import csv, glob, json, os, statistics, sys
out, batch = sys.argv[1], int(sys.argv[2])
rows = []
for line in open(f"{out}/runs.txt"):
    run, m, bw, st, rep, load = line.split()
    steps, sps = [], 0.0
    for f in glob.glob(f"{out}/{run}/worker*.jsonl"):
        recs = [json.loads(x) for x in open(f) if x.strip()]
        meas = [r for r in recs if not r["warmup"]]
        if meas:
            steps += [r["step_ms"] for r in meas]
            span = (meas[-1]["t_end_ns"] - meas[0]["t_start_ns"]) / 1e9
            sps += len(meas) * batch / span if span > 0 else 0
    s = {}
    p = f"{out}/{run}/cluster/summary.json"
    if os.path.exists(p):
        s = json.load(open(p)).get("order_step") or {}
    rows.append(dict(model=m, bandwidth=bw, setting=st, rep=int(rep), load=float(load),
                     samples_per_s=round(sps, 2),
                     step_p50_ms=round(statistics.median(steps), 1) if steps else "",
                     predicted_step_ms=round(s["predicted_step_ms"], 1) if "predicted_step_ms" in s else "",
                     bound_ms=round(s["bound_ms"], 1) if "bound_ms" in s else ""))
with open(f"{out}/torch-order.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
base = {}
for r in rows:
    if r["setting"] == "none_early":
        base.setdefault((r["model"], r["bandwidth"]), []).append(r["samples_per_s"])
print("| model | link | setting | samples/s | vs none_early | step p50 ms | model step / bound ms | load |")
print("|---|---|---|---:|---:|---:|---|---|")
for r in rows:
    b = base.get((r["model"], r["bandwidth"]))
    ratio = f"{r['samples_per_s'] / statistics.mean(b):.2f}x" if b and statistics.mean(b) > 0 else ""
    mb = f"{r['predicted_step_ms']} / {r['bound_ms']}" if r["bound_ms"] != "" else ""
    print(f"| {r['model']} | {r['bandwidth']} | {r['setting']} | {r['samples_per_s']} | {ratio} | "
          f"{r['step_p50_ms']} | {mb} | {r['load']} |")
PY
