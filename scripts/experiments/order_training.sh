#!/usr/bin/env bash
# order_training.sh: the transfer order in whole training iterations of ordo-worker with
# emulated compute (a profile, [model] compute_scale) over emulated links. Per point
# (servers, link, compute scale) and repeat it runs, interleaved: none with pulls at the start
# (the old default), none with early pulls (the best unordered setting), tao with its defaults
# (greedy, early pulls, slices and credit tuned by the step model), the layer index as the
# priority (ByteScheduler's rule, no plan) with tao's slices and credit, and search. Each run
# appends one JSON line to OUT/results.jsonl; order_training_report.py prints the table with
# the step model's prediction and bound (ordo-plan simulate --workers).
#
# usage: scripts/experiments/order_training.sh [OPTIONS] POINT...   (POINT = "SERVERS RATE SCALE")
#   --model NAME      conf/models/NAME.json (default resnet50)
#   --workers W       default 2
#   --repeats R       default 2
#   --iterations N    per run, 2 of them warm-up (default 12)
#   --out DIR         output folder (default runs/order-training-DATE)
#   --bin DIR         binaries (default build/bin)
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
model=resnet50 workers=2 repeats=2 iters=12 out="" bin="$here/build/bin"
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --iterations) iters=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "order_training.sh: unknown argument $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "order_training.sh: give at least one point \"SERVERS RATE SCALE\"" >&2; exit 2; }
out=${out:-$here/runs/order-training-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
# the layer index as the priority: the parameters' listed (forward) order
python3 - "$here/conf/models/$model.json" "$out/layer-index.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
pr = [{"param": p["name"], "priority": i} for i, p in enumerate(m["params"])]
json.dump({"format": "ordo-order/1", "model": m["name"], "policy": "layer-index",
           "priorities": pr}, open(sys.argv[2], "w"))
PY
run() { # run SERVERS RATE SCALE SETTING REP OVERRIDES...
  local s=$1 bw=$2 sc=$3 setting=$4 rep=$5; shift 5
  local name=${model}_s${s}_${bw}_x${sc}_${setting}_$rep load
  load=$(cut -d' ' -f1 /proc/loadavg)
  "$here/scripts/ordo-launch" "$here/conf/resnet50.ini" --bin "$bin" \
    "--model.file=$here/conf/models/$model.json" "--cluster.servers=$s" "--cluster.workers=$workers" \
    "--net.bandwidth=$bw" "--model.compute_scale=$sc" "--model.iterations=$iters" --model.warmup=2 \
    "--output.dir=$out" "--output.run=$name" --output.progress_every=0 --output.log_level=warn \
    "$@" > "$out/$name.log" 2>&1 || { echo "$name FAILED (see $out/$name.log)"; return 0; }
  python3 - "$out/$name/summary.json" "$model" "$s" "$bw" "$sc" "$setting" "$rep" "$load" \
    "$workers" "$out/results.jsonl" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
r = dict(model=sys.argv[2], servers=int(sys.argv[3]), bw=sys.argv[4], scale=float(sys.argv[5]),
         setting=sys.argv[6], rep=int(sys.argv[7]), load=float(sys.argv[8]),
         workers=int(sys.argv[9]), sps=s["throughput_samples_per_s"], p50=s["step_ms"]["p50"],
         order_step=s.get("order_step"))
open(sys.argv[10], "a").write(json.dumps(r) + "\n")
print(f"{r['model']} s{r['servers']} {r['bw']} x{r['scale']:g} {r['setting']:12s} "
      f"{r['sps']:7.1f} samples/s, step p50 {r['p50']:.0f} ms, load {r['load']}")
PY
}
points=("$@")
for rep in $(seq 1 "$repeats"); do
  for pt in "${points[@]}"; do
    read -r s bw sc <<<"$pt"
    run "$s" "$bw" "$sc" none_start "$rep" --order.policy=none --order.pull=start
    run "$s" "$bw" "$sc" none_early "$rep" --order.policy=none --order.pull=early
    run "$s" "$bw" "$sc" tao "$rep" --order.policy=tao
    read -r sl cr < <(python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][-1]; o=r['order_step'] or {}; print(o.get('slice_bytes', 1048576), o.get('credit_bytes', 1048576))" "$out/results.jsonl")
    run "$s" "$bw" "$sc" layer_index "$rep" "--order.policy=file:$out/layer-index.json" \
      "--order.segment_bytes=$sl" "--order.credit_bytes=$cr"
    run "$s" "$bw" "$sc" search "$rep" --order.policy=search --order.search_budget_ms=1000
  done
done
python3 "$here/scripts/experiments/order_training_report.py" "$out/results.jsonl" --bin "$bin"
