#!/usr/bin/env bash
# share.sh: how a server's link is shared among the workers' pulled values ([order] share),
# or any other conf key with two values (--compare, e.g. order.pull=start,early).
# Runs each model with merged pushes on 4 workers and S servers over an emulated link, once
# per value (fair, serial) in every repeat, the two interleaved so that slow phases of the
# machine hit both alike, and prints per model the throughput (samples per second of all
# workers over the measured iterations' wall time, mean over the repeats +- its standard
# error), the iteration time (mean of each run's median), the forward phase (pulls and the
# forward ops waiting on them) and the second value's gain in throughput over the first's.
# Throughput is the figure to compare: with the serial share the workers run a fraction of
# an iteration apart.
#
# usage: scripts/experiments/share.sh [OPTIONS]
#   --models LIST     comma list (default smallmany,googlenet,resnet50)
#   --algo ALGO       merge algorithm (default optimal)
#   --network RATE    emulated link, tc style (default 10gbit)
#   --servers S       default 1
#   --repeats R       runs of each share (default 6)
#   --iterations N    measured iterations per run, after 1 warm-up (default 10)
#   --a-us A --b-ns B --c-ns C
#                     the planner's cost model (default: 10gbit, 1 server as calibrated in
#                     docs/images/merging/pull-early/merging.csv: 28.46, 1.183, 0.5172)
#   --out DIR         output folder (default runs/share-DATE)
#   --bin DIR         binaries (default build/bin)
#   --compare KEY=V1,V2  the conf key and its two values (default order.share=fair,serial)
#   --report-only     only print the table of DIR's runs
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
models="smallmany,googlenet,resnet50"
algo=optimal
network=10gbit
servers=1
repeats=6
iters=10
a_us=28.46
b_ns=1.183
c_ns=0.5172
out=""
bin="$here/build/bin"
report_only=0
compare="order.share=fair,serial"
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --models) models=$2; shift 2 ;;
    --algo) algo=$2; shift 2 ;;
    --network) network=$2; shift 2 ;;
    --servers) servers=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --iterations) iters=$2; shift 2 ;;
    --a-us) a_us=$2; shift 2 ;;
    --b-ns) b_ns=$2; shift 2 ;;
    --c-ns) c_ns=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --compare) compare=$2; shift 2 ;;
    --report-only) report_only=1; shift ;;
    *) echo "share.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "share.sh: --repeats must be a positive integer" >&2; exit 2; }
[[ "$iters" =~ ^[1-9][0-9]*$ ]] || { echo "share.sh: --iterations must be a positive integer" >&2; exit 2; }
[[ "$compare" =~ ^([a-z_]+\.[a-z_]+)=([^,=]+),([^,=]+)$ ]] ||
  { echo "share.sh: --compare must be SECTION.KEY=V1,V2 (got $compare)" >&2; exit 2; }
key=${BASH_REMATCH[1]} v1=${BASH_REMATCH[2]} v2=${BASH_REMATCH[3]}
[ -n "$out" ] || out="$here/runs/share-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out/runs"
models=${models//,/ }
[ $report_only = 1 ] || echo "share: $key $v1 vs $v2; $models, $algo, $network, $servers server(s), 4 workers, $repeats repeats x $iters iterations; output $out"
for r in $(seq 1 "$repeats"); do
  [ $report_only = 0 ] || break
  for m in $models; do
    for val in "$v1" "$v2"; do
      run="$m-$val-r$r"
      if ! "$here/scripts/ordo-launch" "$here/conf/experiments/merging.ini" --bin "$bin" \
          "--model.file=$here/conf/models/$m.json" "--model.iterations=$((iters + 1))" \
          --model.warmup=1 --cluster.workers=4 "--cluster.servers=$servers" \
          "--net.bandwidth=$network" --net.latency_us=100 "--push.merge=$algo" \
          "--push.merge_a_us=$a_us" "--push.merge_b_ns=$b_ns" "--push.merge_c_ns=$c_ns" \
          "--$key=$val" "--output.dir=$out/runs" "--output.run=$run" \
          > "$out/runs/$run.log" 2>&1; then
        echo "share.sh: run $run failed (log: $out/runs/$run.log)" >&2
        exit 1
      fi
    done
  done
done
python3 - "$out" "$key" "$v1" "$v2" $models <<'EOF'
import glob, json, math, os, statistics, sys
out, key, v1, v2, models = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
def run_medians(path):
    it = {}
    for line in open(os.path.join(path, "metrics.jsonl")):
        o = json.loads(line)
        if o["iter"] < 1:
            continue
        it.setdefault(o["iter"], []).append((o["step_ms"], o["forward_ms"]))
    step = statistics.median(sum(x[0] for x in v) / len(v) for v in it.values())
    fwd = statistics.median(sum(x[1] for x in v) / len(v) for v in it.values())
    thr = json.load(open(os.path.join(path, "summary.json")))["throughput_samples_per_s"]
    return thr, step, fwd
def se(v):
    return statistics.stdev(v) / math.sqrt(len(v)) if len(v) > 1 else 0.0
print("%-13s %-7s %5s %18s %10s %11s" % ("model", key.split(".")[1], "runs", "samples/s", "iter_ms", "forward_ms"))
for m in models:
    res = {}
    for share in (v1, v2):
        runs = [run_medians(p) for p in sorted(glob.glob(os.path.join(out, "runs", "%s-%s-r*" % (m, share))))
                if os.path.isdir(p)]
        if not runs:
            continue
        thr = [x[0] for x in runs]
        res[share] = statistics.mean(thr)
        print("%-13s %-7s %5d %10.1f +- %5.1f %10.1f %11.1f" % (m, share, len(runs), statistics.mean(thr), se(thr),
                                                          statistics.mean(x[1] for x in runs),
                                                          statistics.mean(x[2] for x in runs)))
    if len(res) == 2:
        print("%-13s %s's throughput over %s's: %+.1f %%" % (m, v2, v1, 100 * (res[v2] / res[v1] - 1)))
EOF
