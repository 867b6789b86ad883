#!/usr/bin/env bash
# merging_aa.sh: how far apart two runs of the same plan land (an A/A test), beside another
# algorithm, in the merging experiment's setup (conf/experiments/merging.ini, 4 workers).
# Each repeat runs, per model and server count, arm A (--algo), then --other, then arm B
# (--algo again), so the two arms of one plan see the machine alike; the table then gives
# per row both arms' iteration times (mean of run medians +- standard error), how far apart
# they are, the other algorithm's time and the pooled arms against it. Where A and B differ
# by more than a margin, the experiment cannot tell plans apart by that margin.
#
# usage: scripts/experiments/merging_aa.sh [OPTIONS]
#   --models LIST      comma list (default resnet50,densenet121,googlenet,inception_v2,smallmany)
#   --servers LIST     default 1,2
#   --network NET      RATE or RATE+USus as in merging.sh (default 10gbit)
#   --algo ALGO        the plan run twice (default optimal)
#   --other ALGO       the algorithm between them (default mgwfbp)
#   --pull start|early default early
#   --repeats R        default 6
#   --iterations N     measured iterations per run, after 1 warm-up (default 25)
#   --calibration FILE merging.sh's calibration.txt ("NET S a_us b_ns c_ns ...") for the
#                      cost model (default docs/images/merging/pull-early/calibration.txt)
#   --out DIR          output folder (default runs/merging-aa-DATE); runs.csv lands there
#   --bin DIR          binaries (default build/bin)
#   --report-only      only write runs.csv and print the table of DIR's runs
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
models="resnet50,densenet121,googlenet,inception_v2,smallmany"
servers_list="1,2"
network=10gbit
algo=optimal
other=mgwfbp
pull=early
repeats=6
iters=25
calibration="$here/docs/images/merging/pull-early/calibration.txt"
out=""
bin="$here/build/bin"
report_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --models) models=$2; shift 2 ;;
    --servers) servers_list=$2; shift 2 ;;
    --network) network=$2; shift 2 ;;
    --algo) algo=$2; shift 2 ;;
    --other) other=$2; shift 2 ;;
    --pull) pull=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --iterations) iters=$2; shift 2 ;;
    --calibration) calibration=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --report-only) report_only=1; shift ;;
    *) echo "merging_aa.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "merging_aa.sh: --repeats must be a positive integer" >&2; exit 2; }
[[ "$iters" =~ ^[1-9][0-9]*$ ]] || { echo "merging_aa.sh: --iterations must be a positive integer" >&2; exit 2; }
case "$pull" in start|early) ;; *) echo "merging_aa.sh: --pull must be start or early" >&2; exit 2 ;; esac
[ "$algo" != "$other" ] || { echo "merging_aa.sh: --other must differ from --algo" >&2; exit 2; }
[ -n "$out" ] || out="$here/runs/merging-aa-$(date +%Y%m%d-%H%M%S)"
models=${models//,/ }
servers_list=${servers_list//,/ }
rate=${network%%+*}
case "$network" in *+*us) msg=${network#*+}; msg=${msg%us} ;; *) msg=0 ;; esac
[[ "$msg" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "merging_aa.sh: network '$network' is not RATE or RATE+USus" >&2; exit 2; }
mkdir -p "$out/runs"
# a run is named MODEL-NET-sS-ARM-rK, ARM being ALGO with A or B, or OTHER (':' as '_')
tag() { echo "${1//:/_}"; }
if [ $report_only = 0 ]; then
  for S in $servers_list; do
    grep -q "^$network $S " "$calibration" 2>/dev/null ||
      { echo "merging_aa.sh: $calibration has no line for $network with $S servers" >&2; exit 2; }
  done
  echo "merging_aa: $algo (twice) and $other; $models; $network; servers $servers_list; pull $pull;" \
       "$repeats repeats x $iters iterations; output $out"
  for rep in $(seq 1 "$repeats"); do
    for m in $models; do
      for S in $servers_list; do
        read -r _ _ a_us b_ns c_ns _ < <(grep "^$network $S " "$calibration")
        for arm in "$(tag "$algo")A" "$(tag "$other")" "$(tag "$algo")B"; do
          case "$arm" in "$(tag "$other")") a=$other ;; *) a=$algo ;; esac
          run="$m-$network-s$S-$arm-r$rep"
          [ -f "$out/runs/$run/summary.json" ] && continue
          "$here/scripts/ordo-launch" "$here/conf/experiments/merging.ini" --bin "$bin" \
            "--model.file=$here/conf/models/$m.json" "--model.iterations=$((iters + 1))" \
            --model.warmup=1 --cluster.workers=4 "--cluster.servers=$S" \
            "--net.bandwidth=$rate" --net.latency_us=100 "--net.msg_us=$msg" "--push.merge=$a" \
            "--push.merge_a_us=$a_us" "--push.merge_b_ns=$b_ns" "--push.merge_c_ns=$c_ns" \
            --order.share=fair "--order.pull=$pull" --output.log_level=info \
            "--output.dir=$out/runs" "--output.run=$run" > "$out/runs/$run.log" 2>&1 ||
            { echo "merging_aa.sh: run $run failed (log: $out/runs/$run.log)" >&2; exit 1; }
          echo "$(date +%T) $run"
        done
      done
    done
  done
fi
python3 - "$here" "$out" "$network" "$(tag "$algo")" "$(tag "$other")" "$servers_list" $models <<'EOF'
import json, math, os, re, statistics, sys
here, out, net, algo, other, servers = sys.argv[1:7]
models = sys.argv[7:]
sys.path.insert(0, os.path.join(here, "scripts", "experiments"))
from runstats import one_run  # a run's median iteration and phases, as merging_report reads them
arms = [algo + "A", other, algo + "B"]
csv = open(os.path.join(out, "runs.csv"), "w")
csv.write("model,network,servers,arm,repeat,iter_ms,forward_ms,backward_ms,groups,predicted_ms\n")
print("| model | servers | repeats | %s A (ms) | %s B (ms) | A vs B | %s (ms) | %s (A and B) vs %s |"
      % (algo, algo, other, algo, other))
print("|---|---|---|---|---|---|---|---|")
gaps = []
for m in models:
    for S in servers.split():
        res = {}
        for arm in arms:
            res[arm] = []
            for r in range(1, 10000):
                o = one_run(os.path.join(out, "runs", "%s-%s-s%s-%s-r%d" % (m, net, S, arm, r)))
                if o is None:
                    break
                res[arm].append(o[0])
                csv.write("%s,%s,%s,%s,%d,%.4g,%.4g,%.4g,%s,%.4g\n"
                          % (m, net, S, arm, r, o[0], o[7], o[8], o[2], o[4]))
        n = min(len(v) for v in res.values())
        if n < 2:
            continue
        mean = {k: statistics.mean(v[:n]) for k, v in res.items()}
        se = {k: statistics.stdev(v[:n]) / math.sqrt(n) for k, v in res.items()}
        gap = 100 * abs(mean[arms[0]] - mean[arms[2]]) / min(mean[arms[0]], mean[arms[2]])
        gaps.append(gap)
        pooled = statistics.mean(res[arms[0]][:n] + res[arms[2]][:n])
        print("| %s | %s | %d | %.1f ± %.1f | %.1f ± %.1f | %.1f %% | %.1f ± %.1f | %+.1f %% |"
              % (m, S, n, mean[arms[0]], se[arms[0]], mean[arms[2]], se[arms[2]], gap,
                 mean[other], se[other], 100 * (pooled / mean[other] - 1)))
if gaps:
    print("\nA against B: largest %.1f %%, median %.1f %%, %d of %d rows more than 2 %% apart"
          % (max(gaps), statistics.median(gaps), sum(g > 2 for g in gaps), len(gaps)))
EOF
