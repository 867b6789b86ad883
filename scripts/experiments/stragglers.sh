#!/usr/bin/env bash
# stragglers.sh: consistency models and backup workers against stragglers (docs/stragglers.md).
# Trains the mlp on Fashion-MNIST with 4 workers and 2 servers on this host, for every
# straggler scenario (none; worker 1 persistently x2 and x4 slower; transient: each worker's
# each iteration delayed 20 ms with probability 0.1), every sync model (bsp, ssp 1, ssp 3,
# asp, bsp with 1 backup worker) and every ordering (fifo = off, tao), and writes one CSV
# row per run (throughput, mean step, time to the target test accuracy, final accuracy,
# staleness, late pushes; wall_s and samples, the run's length, in the CSV: the trainers
# read through the batch service under ssp, asp and backup workers, docs/stragglers.md), gnuplot plots (when gnuplot is installed) and a Markdown table.
# Worker 0 evaluates the first --eval-samples test samples every --eval-every iterations;
# the times to the target accuracy include those evaluations (leaving them out would favour
# the models whose other workers go on meanwhile). A model profile (--model resnet50,
# vgg16, any conf/models/M.json) runs with emulated compute on an emulated link
# (--bandwidth, latency 100 us) for throughput alone: its table has samples/s (wall clock, and
# "busy": the sum of the workers' own rates), mean step and compute time, staleness, late pushes.
#
# usage: scripts/experiments/stragglers.sh [OPTIONS]
#   --model M         mlp or cnn (conf/M.ini), or a profile conf/models/M.json (default mlp)
#   --iterations N    iterations per run (default 350: 1.5 epochs at batch 64 on 4 workers;
#                     a profile: 20, with model.warmup = 2)
#   --bandwidth RATE  a profile's emulated link, each process's egress (default 10gbit)
#   --compute-scale X a profile's op times x X (default 1: the profiled GPU times)
#   --transient-ms T  the transient scenario's delay (default 20; 200 for a profile)
#   --target A        target test accuracy (default 0.84); the table also shows the time to
#                     0.80: worker 0's summed step times and evaluations until its first
#                     evaluation at or above the target (from metrics.jsonl, so
#                     --report-only can change it)
#   --eval-every N    default 25
#   --eval-samples N  test samples per evaluation (default 2000; the final one uses all)
#   --scenarios LIST  comma list of none,x2,x4,transient (default all)
#   --modes LIST      comma list of bsp,ssp1,ssp3,asp,backup1 (default all)
#   --orders LIST     comma list of fifo,tao (default both)
#   --out DIR         output folder (default runs/stragglers-DATE)
#   --bin DIR         binaries (default build/bin)
#   --report-only     only write the CSV, plots and table of DIR's runs
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
model=mlp
iters=""
bandwidth=10gbit
compute_scale=1
transient_ms=""
target=0.84
eval_every=25
eval_samples=2000
scenarios="none,x2,x4,transient"
modes="bsp,ssp1,ssp3,asp,backup1"
orders="fifo,tao"
out=""
bin="$here/build/bin"
report_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --model) model=$2; shift 2 ;;
    --iterations) iters=$2; shift 2 ;;
    --bandwidth) bandwidth=$2; shift 2 ;;
    --compute-scale) compute_scale=$2; shift 2 ;;
    --transient-ms) transient_ms=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    --eval-every) eval_every=$2; shift 2 ;;
    --eval-samples) eval_samples=$2; shift 2 ;;
    --scenarios) scenarios=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --orders) orders=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --report-only) report_only=1; shift ;;
    *) echo "stragglers.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || out="$here/runs/stragglers-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
# model flags: a trainer's conf with evaluations, or a profile on an emulated link
if [ -f "$here/conf/$model.ini" ] && [ ! -f "$here/conf/models/$model.json" ]; then
  base="$here/conf/$model.ini"
  [ -n "$iters" ] || iters=350
  [ -n "$transient_ms" ] || transient_ms=20
  model_flags=(--model.eval_every="$eval_every" --model.eval_samples="$eval_samples"
               --model.target_accuracy="$target")
elif [ -f "$here/conf/models/$model.json" ]; then
  base="$here/conf/resnet50.ini"
  [ -n "$iters" ] || iters=20
  [ -n "$transient_ms" ] || transient_ms=200
  # vgg16 moves 553 MB per worker and iteration: a generous fault timeout
  model_flags=(--model.file="$here/conf/models/$model.json" --model.trainer=profile
               --model.compute=emulate --model.compute_scale="$compute_scale" --model.warmup=2
               --net.bandwidth="$bandwidth" --net.latency_us=100 --fault.timeout_ms=30000)
else
  echo "stragglers.sh: no conf/$model.ini nor conf/models/$model.json" >&2; exit 2
fi

scenario_flags() {
  case "$1" in
    none) ;;
    x2) echo "--straggle.ranks=1 --straggle.slowdown=2" ;;
    x4) echo "--straggle.ranks=1 --straggle.slowdown=4" ;;
    transient) echo "--straggle.probability=0.1 --straggle.delay_ms=$transient_ms" ;;
    *) echo "stragglers.sh: unknown scenario $1" >&2; exit 2 ;;
  esac
}
mode_flags() {
  case "$1" in
    bsp) echo "--sync.mode=bsp" ;;
    ssp*) echo "--sync.mode=ssp --sync.staleness=${1#ssp}" ;;
    asp) echo "--sync.mode=asp" ;;
    backup*) echo "--sync.mode=bsp --sync.backup=${1#backup}" ;;
    *) echo "stragglers.sh: unknown mode $1" >&2; exit 2 ;;
  esac
}

if [ "$report_only" = 0 ]; then
  for order in ${orders//,/ }; do
    for sc in ${scenarios//,/ }; do
      for mode in ${modes//,/ }; do
        name="$sc-$mode-$order"
        echo "== $name"
        # shellcheck disable=SC2046
        "$here/scripts/ordo-launch" "$base" --bin "$bin" --cluster.workers=4 \
          --cluster.servers=2 --model.epochs=0 --model.iterations="$iters" "${model_flags[@]}" \
          --order.policy="$order" --output.dir="$out" --output.run="$name" \
          --output.progress_every=0 $(scenario_flags "$sc") $(mode_flags "$mode") \
          > "$out/$name.log" 2>&1 || { echo "run $name failed (see $out/$name.log)" >&2; exit 1; }
      done
    done
  done
fi

python3 - "$out" "$target" <<'PY'
import json, os, sys
out, target = sys.argv[1], float(sys.argv[2])
def time_to(run, target):
    """worker 0's summed step times and evaluations up to its first iteration whose test
    accuracy reached target"""
    recs = [json.loads(line) for line in open(os.path.join(run, "metrics.jsonl"))]
    spent = 0.0
    for r in sorted((r for r in recs if r["worker"] == 0), key=lambda r: r["iter"]):
        spent += r["step_ms"]
        if r.get("test_accuracy", 0) >= target:
            return (spent + r.get("eval_ms", 0.0)) / 1e3
    return None

def busy_rate(run, d):
    """the sum over workers of batch / that worker's mean step after the warm-up: the rate
    while every worker runs. Without the batch service (bsp, and profiles, which read no
    data) the run's wall-clock throughput ends with the slowest worker's last iterations,
    alone, under asp and backup workers as under bsp"""
    m = (d.get("conf") or {}).get("model") or {}
    batch = m.get("batch") or 0
    if not batch and m.get("file") and os.path.isfile(m["file"]):
        batch = json.load(open(m["file"])).get("batch", 0)
    steps = {}
    for line in open(os.path.join(run, "metrics.jsonl")):
        r = json.loads(line)
        if r["iter"] >= d.get("warmup", 0):
            steps.setdefault(r["worker"], []).append(r["step_ms"])
    if not batch or not steps:
        return None
    return sum(batch * len(v) / (sum(v) / 1e3) for v in steps.values())

rows = []
for name in sorted(os.listdir(out)):
    p = os.path.join(out, name, "summary.json")
    if not os.path.isfile(p):
        continue
    d = json.load(open(p))
    sc, mode, order = name.split("-")
    sync = d.get("sync") or {}
    rows.append(dict(scenario=sc, mode=mode, order=order,
                     throughput=d.get("throughput_samples_per_s"),
                     busy_rate=busy_rate(os.path.join(out, name), d),
                     step_ms=d["step_ms"]["mean"],
                     compute_ms=(d.get("compute_ms") or {}).get("mean"),
                     time_to_80_s=time_to(os.path.join(out, name), 0.80),
                     time_to_target_s=time_to(os.path.join(out, name), target),
                     test_accuracy=d.get("test_accuracy"),
                     staleness_mean=sync.get("staleness_mean", 0.0),
                     staleness_max=sync.get("staleness_max", 0),
                     late_pushes=sync.get("late_pushes", 0),
                     wall_s=d.get("wall_s"), samples=d.get("samples")))
cols = list(rows[0].keys()) if rows else []
with open(os.path.join(out, "stragglers.csv"), "w") as f:
    f.write(",".join(cols) + "\n")
    for r in rows:
        f.write(",".join("" if r[c] is None else str(r[c]) for c in cols) + "\n")
order_s = {"none": 0, "x2": 1, "x4": 2, "transient": 3}
order_m = {"bsp": 0, "ssp1": 1, "ssp3": 2, "asp": 3, "backup1": 4}
rows.sort(key=lambda r: (r["order"], order_s.get(r["scenario"], 9), order_m.get(r["mode"], 9)))
base = {(r["order"], r["scenario"]): r for r in rows if r["mode"] == "bsp"}
fmt = lambda v, f: "n/a" if v is None else f % v
profile = all(r["test_accuracy"] is None for r in rows)
if profile:  # a model profile: throughput alone
    lines = ["| order | stragglers | sync | samples/s | vs bsp | busy samples/s | vs bsp | step ms "
             "| compute ms | staleness mean / max | late pushes |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
else:
    lines = ["| order | stragglers | sync | samples/s | step ms | time to 80 %% (s) | vs bsp | "
             "time to %.0f %% (s) | vs bsp | test acc %% | staleness mean / max | late pushes |"
             % (100 * target), "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
for r in rows:
    b = base.get((r["order"], r["scenario"]))
    gain = lambda k: (b[k] / r[k] if b and b[k] and r[k] else None)
    if profile:
        up = lambda k: (r[k] / b[k] if b and b[k] and r[k] else None)
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s |" % (
            r["order"], r["scenario"], r["mode"], fmt(r["throughput"], "%.0f"),
            fmt(up("throughput"), "%.2fx"), fmt(r["busy_rate"], "%.0f"), fmt(up("busy_rate"), "%.2fx"),
            fmt(r["step_ms"], "%.1f"), fmt(r["compute_ms"], "%.1f"),
            fmt(r["staleness_mean"], "%.2f"), r["staleness_max"], r["late_pushes"]))
        continue
    lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s |" % (
        r["order"], r["scenario"], r["mode"], fmt(r["throughput"], "%.0f"),
        fmt(r["step_ms"], "%.2f"), fmt(r["time_to_80_s"], "%.2f"), fmt(gain("time_to_80_s"), "%.2fx"),
        fmt(r["time_to_target_s"], "%.2f"), fmt(gain("time_to_target_s"), "%.2fx"),
        fmt(None if r["test_accuracy"] is None else 100 * r["test_accuracy"], "%.2f"),
        fmt(r["staleness_mean"], "%.2f"), r["staleness_max"], r["late_pushes"]))
open(os.path.join(out, "stragglers.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
# gnuplot data: one block per order, scenarios x modes
with open(os.path.join(out, "stragglers.dat"), "w") as f:
    for o in sorted({r["order"] for r in rows}):
        f.write("# order %s: scenario %s\n" % (o, " ".join(order_m)))
        for sc in order_s:
            vals = []
            for m in order_m:
                rr = [r for r in rows if r["order"] == o and r["scenario"] == sc and r["mode"] == m]
                vals.append(rr[0] if rr else None)
            f.write(sc + " " + " ".join(fmt(v and v["time_to_target_s"], "%.3f") if v else "nan"
                                       for v in vals).replace("n/a", "nan") + "  " +
                    " ".join(fmt(v and v["throughput"], "%.1f") if v else "nan"
                             for v in vals).replace("n/a", "nan") + "  " +
                    " ".join(fmt(v and v["busy_rate"], "%.1f") if v else "nan"
                             for v in vals).replace("n/a", "nan") + "\n")
        f.write("\n\n")
PY
# the plots show the first order's block; a profile's table has no accuracy to plot
first_order=$(sed -n '1s/^# order \([a-z]*\):.*/\1/p' "$out/stragglers.dat")
plots="throughput"
grep -q "time to" "$out/stragglers.md" && plots="time-to-target throughput"

if command -v gnuplot > /dev/null; then
  {
    cat <<GP
set terminal pngcairo size 1000,420
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set key top left
set datafile missing "nan"
set yrange [0:*]
GP
    case "$plots" in time-to-target*) cat <<GP ;; esac
set output "$out/time-to-target.png"
set ylabel "seconds to $target test accuracy"
set title "$model, 4 workers, 2 servers, ordering $first_order: time to target"
plot "$out/stragglers.dat" index 0 using 2:xtic(1) title "bsp", '' index 0 using 3 title "ssp 1", \
     '' index 0 using 4 title "ssp 3", '' index 0 using 5 title "asp", '' index 0 using 6 title "backup 1"
GP
    # a profile's plot shows the busy rate (columns 12 to 16), the others the wall clock's
    c=7; what="throughput"
    [ "$plots" = throughput ] && { c=12; what="busy rate (sum of the workers' batch / step)"; }
    cat <<GP
set output "$out/throughput.png"
set ylabel "samples / s"
set title "$model, 4 workers, 2 servers, ordering $first_order: $what"
plot "$out/stragglers.dat" index 0 using $c:xtic(1) title "bsp", '' index 0 using $((c + 1)) title "ssp 1", \
     '' index 0 using $((c + 2)) title "ssp 3", '' index 0 using $((c + 3)) title "asp", \
     '' index 0 using $((c + 4)) title "backup 1"
GP
  } | gnuplot
  echo "plots: $(for p in $plots; do printf '%s ' "$out/$p.png"; done)"
else
  echo "(gnuplot not installed: no plots; data in $out/stragglers.dat)"
fi
echo "csv: $out/stragglers.csv"
