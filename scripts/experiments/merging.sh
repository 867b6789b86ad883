#!/usr/bin/env bash
# merging.sh: the merged-gradient experiments (MG-WFBP). For each emulated network the
# script first calibrates the planner's cost model with ordo-bench calibrate (W workers
# pushing at once to S servers: a = what one more pipelined push costs beyond its bytes,
# b = the link's time per byte, c = the receivers' time per byte once a message has
# arrived), then
# runs every model on 4 workers and S servers with merged pushes under each merge algorithm,
# interleaving the algorithms and repeating the set; merging_report.py then writes
# merging.csv (iteration time, non-overlapped communication, messages, predicted time per
# row), merging-summary.csv (one line per model, network and servers) and the PNG plots.
#
# usage: scripts/experiments/merging.sh [OPTIONS]
#   --iterations SPEC  measured iterations per run, after 1 warm-up: N for every network,
#                      and NET=N for one (default 5,10gbit=25,10gbit+250us=25: the CPU-bound
#                      networks move by +-10 % from one iteration to the next on 2 cores)
#   --repeats R        runs of each configuration, interleaved (default 3)
#   --start-repeat K   number the repeats K .. K+R-1 and keep DIR's calibration (to add
#                      repeats to an earlier output folder; default 1)
#   --models LIST      comma or space list (default resnet50,densenet121,googlenet,
#                      inception_v2,smallmany)
#   --algos LIST       default wfbp,all,bytes:25MiB,mgwfbp,optimal
#   --networks LIST    emulated links: RATE (tc style) or RATE+USus, a link with a cost of US
#                      microseconds per message on top of its bytes (net.msg_us)
#                      (default 1gbit,10gbit,10gbit+250us)
#   --servers LIST     default 2
#   --latency-us US    one-way latency of the emulated links (default 100)
#   --dilate SPEC      time dilation: K for every network, or NET=K for one (default none).
#                      A network dilated K times runs with its rate / K, its latency and
#                      per-message cost x K and the profile's op times x K
#                      (model.compute_scale), so every emulated time is K times longer
#                      while the CPU's own costs are not: the cluster a fast network needs,
#                      with a host CPU K times faster, on a machine with few cores. The
#                      calibration runs on the dilated link; the report gives times, and
#                      the cost model, divided by K (dilation.txt in DIR)
#   --workers W        default 4
#   --share fair|serial how servers share their links among the workers' pulled values
#                      ([order] share, default fair)
#   --pull start|early when workers ask for the next values ([order] pull, default start)
#   --a-us A --b-ns B [--c-ns C]
#                      skip calibration: the planner's cost model for every network
#   --out DIR          output folder (default runs/merging-DATE)
#   --bin DIR          binaries (default build/bin)
#   --resume           go on with DIR: keep its calibration, skip the runs that completed
#   --report-only      only (re)write the CSV files and plots from DIR's runs
# A run that fails is tried once more (the machine is shared; a neighbour's clean-up or an
# overload can end a run); a second failure stops the script.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
iters_spec="5,10gbit=25,10gbit+250us=25"
repeats=3
start=1
models="resnet50,densenet121,googlenet,inception_v2,smallmany"
algos="wfbp,all,bytes:25MiB,mgwfbp,optimal"
networks="1gbit,10gbit,10gbit+250us"
servers_list="2"
latency=100
dilate_spec=""
workers=4
share=fair
pull=start
fixed_a=""
fixed_b=""
fixed_c=0
out=""
bin="$here/build/bin"
report_only=0
resume=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,45p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --iterations) iters_spec=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --start-repeat) start=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --algos) algos=$2; shift 2 ;;
    --networks) networks=$2; shift 2 ;;
    --servers) servers_list=$2; shift 2 ;;
    --latency-us) latency=$2; shift 2 ;;
    --dilate) dilate_spec=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --share) share=$2; shift 2 ;;
    --pull) pull=$2; shift 2 ;;
    --a-us) fixed_a=$2; shift 2 ;;
    --b-ns) fixed_b=$2; shift 2 ;;
    --c-ns) fixed_c=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --report-only) report_only=1; shift ;;
    --resume) resume=1; shift ;;
    *) echo "merging.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$share" in fair|serial) ;; *) echo "merging.sh: --share must be fair or serial" >&2; exit 2 ;; esac
case "$pull" in start|early) ;; *) echo "merging.sh: --pull must be start or early" >&2; exit 2 ;; esac
[ -n "$out" ] || out="$here/runs/merging-$(date +%Y%m%d-%H%M%S)"
models=${models//,/ }
algos=${algos//,/ }
networks=${networks//,/ }
servers_list=${servers_list//,/ }
# spec_of SPEC DEFAULT NET: a network's value in a spec "N,NET=N,...": NET=N for it, else
# the bare N, else DEFAULT
spec_of() {
  local n=$2 item
  for item in ${1//,/ }; do
    if [[ "$item" != *=* ]]; then n=$item; fi
  done
  for item in ${1//,/ }; do
    if [[ "$item" == "$3="* ]]; then n=${item#*=}; fi
  done
  echo "$n"
}
# iterations_of NET: the measured iterations of a network's runs (--iterations)
iterations_of() { spec_of "$iters_spec" 5 "$1"; }
# dilation_of NET: its time dilation factor (--dilate)
dilation_of() { spec_of "$dilate_spec" 1 "$1"; }
for item in ${iters_spec//,/ }; do
  [[ "${item#*=}" =~ ^[1-9][0-9]*$ ]] \
    || { echo "merging.sh: --iterations: '$item' is not N or NET=N with N a positive integer" >&2; exit 2; }
done
for item in ${dilate_spec//,/ }; do
  [[ "${item#*=}" =~ ^[1-9][0-9]*$ ]] \
    || { echo "merging.sh: --dilate: '$item' is not K or NET=K with K a positive integer" >&2; exit 2; }
done
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "merging.sh: --repeats must be a positive integer" >&2; exit 2; }
[[ "$start" =~ ^[1-9][0-9]*$ ]] || { echo "merging.sh: --start-repeat must be a positive integer" >&2; exit 2; }
if [ -n "$fixed_a$fixed_b" ] && { [ -z "$fixed_a" ] || [ -z "$fixed_b" ]; }; then
  echo "merging.sh: --a-us and --b-ns go together" >&2; exit 2
fi
for b in ordo-bench ordo-scheduler ordo-server ordo-worker; do
  [ -x "$bin/$b" ] || { echo "merging.sh: $bin/$b is not built (scripts/build.sh)" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "merging.sh: needs python3" >&2; exit 2; }
# completed DIR ITERS: the run wrote its summary with every iteration measured
completed() {
  python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["iterations"] != int(sys.argv[2]))' \
    "$1/summary.json" $(($2 + 1)) 2>/dev/null
}
# a network is RATE or RATE+USus (US microseconds per message on the link)
rate() { echo "${1%%+*}"; }
msg_us() { case "$1" in *+*us) local u=${1#*+}; echo "${u%us}" ;; *) echo 0 ;; esac; }
for net in $networks; do
  [[ "$(msg_us "$net")" =~ ^[0-9]+([.][0-9]+)?$ ]] && [ -n "$(rate "$net")" ] \
    || { echo "merging.sh: network '$net' is not RATE or RATE+USus" >&2; exit 2; }
  [[ "$(rate "$net")" =~ ^[0-9]+([.][0-9]+)?(bit|kbit|mbit|gbit|tbit)$ ]] \
    || { echo "merging.sh: network '$net': '$(rate "$net")' is not a rate such as 10gbit" >&2; exit 2; }
done
# what a network's runs are given, dilated K times: rate / K, latency and msg_us x K
run_rate() {
  local r k; r=$(rate "$1"); k=$(dilation_of "$1")
  [ "$k" = 1 ] && { echo "$r"; return; }
  awk -v r="$r" -v k="$k" 'BEGIN {
    n = r + 0; u = r; sub(/^[0-9.]+/, "", u)
    m = (u == "kbit") ? 1e3 : (u == "mbit") ? 1e6 : (u == "gbit") ? 1e9 : (u == "tbit") ? 1e12 : 1
    printf "%.0fbit\n", n * m / k }'
}
run_latency() { awk -v x="$latency" -v k="$(dilation_of "$1")" 'BEGIN { printf "%.10g\n", x * k }'; }
run_msg_us() { awk -v x="$(msg_us "$1")" -v k="$(dilation_of "$1")" 'BEGIN { printf "%.10g\n", x * k }'; }
mkdir -p "$out/runs"
log="$out/merging.log"

if [ $report_only = 0 ]; then
  echo "merging: $iters_spec iterations (+1 warm-up) x $repeats repeats; models: $models;" \
       "algorithms: $algos; networks: $networks (latency $latency us${dilate_spec:+; dilated $dilate_spec}); servers: $servers_list;" \
       "$workers workers; share $share, pull $pull; output $out" | tee -a "$log"
  for m in $models; do
    [ -f "$here/conf/models/$m.json" ] || { echo "merging.sh: no profile conf/models/$m.json" >&2; exit 2; }
  done
  # the planner's cost model per network and server count, measured with the run's workers
  # pushing at once (ordo-bench calibrate: a from pipelined pushes, b the link, c from one
  # push alone beyond the link)
  [ "$start" = 1 ] && [ $resume = 0 ] && : > "$out/calibration.txt" && : > "$out/dilation.txt"
  # the dilation of each network, for the report (a folder's runs keep their dilation)
  for net in $networks; do
    k=$(dilation_of "$net")
    if grep -q "^$net " "$out/dilation.txt" 2>/dev/null; then
      grep -q "^$net $k\$" "$out/dilation.txt" \
        || { echo "merging.sh: $out ran $net with another dilation ($(grep "^$net " "$out/dilation.txt"))" >&2; exit 2; }
    else
      echo "$net $k" >> "$out/dilation.txt"
    fi
  done
  for net in $networks; do
    for S in $servers_list; do
      if grep -q "^$net $S " "$out/calibration.txt" 2>/dev/null; then
        echo "merging: keeping the calibration of $net, $S servers: $(grep "^$net $S " "$out/calibration.txt")" | tee -a "$log"
        continue
      fi
      if [ -n "$fixed_a" ]; then  # given for the emulated network: the runs' are K times
        awk -v n="$net" -v s="$S" -v a="$fixed_a" -v b="$fixed_b" -v c="$fixed_c" -v k="$(dilation_of "$net")" \
          'BEGIN { printf "%s %s %.6g %.6g %.6g fixed\n", n, s, a * k, b * k, c * k }' >> "$out/calibration.txt"
        continue
      fi
      cal="$out/calibrate-$net-s$S"
      "$bin/ordo-bench" calibrate --json --workers "$workers" --servers "$S" --bandwidth "$(run_rate "$net")" \
        --latency-us "$(run_latency "$net")" --msg-us "$(run_msg_us "$net")" --reps 15 > "$cal.jsonl" 2> "$cal.log" \
        || { echo "merging.sh: calibration at $net, $S servers failed: $cal.log" >&2; exit 1; }
      python3 - "$cal.jsonl" "$net" "$S" >> "$out/calibration.txt" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o.get("fit") == "per_message":
        print("%s %s %.6g %.6g %.6g calibrated" % (sys.argv[2], sys.argv[3], o["merge_a_us"],
                                                    o["merge_b_ns"], o["merge_c_ns"]))
PY
      tail -n 1 "$out/calibration.txt" | tee -a "$log"
    done
  done
  for rep in $(seq "$start" $((start + repeats - 1))); do
    for m in $models; do
      for net in $networks; do
        iters=$(iterations_of "$net")
        for S in $servers_list; do
          read -r _ _ a_us b_ns c_ns _ < <(grep "^$net $S " "$out/calibration.txt")
          for algo in $algos; do
            run="$m-$net-s$S-${algo//:/_}-r$rep"
            if [ $resume = 1 ] && completed "$out/runs/$run" "$iters"; then continue; fi
            t0=$(date +%s)
            for try in 1 2; do
              rm -rf "${out:?}/runs/$run"
              if "$here/scripts/ordo-launch" "$here/conf/experiments/merging.ini" --bin "$bin" \
                  "--model.file=$here/conf/models/$m.json" "--model.iterations=$((iters + 1))" \
                  --model.warmup=1 "--cluster.workers=$workers" "--cluster.servers=$S" \
                  "--net.bandwidth=$(run_rate "$net")" "--net.latency_us=$(run_latency "$net")" \
                  "--net.msg_us=$(run_msg_us "$net")" "--model.compute_scale=$(dilation_of "$net")" \
                  "--push.merge=$algo" "--push.merge_a_us=$a_us" \
                  "--push.merge_b_ns=$b_ns" "--push.merge_c_ns=$c_ns" "--order.share=$share" "--order.pull=$pull" \
                  --output.log_level=info \
                  "--output.dir=$out/runs" "--output.run=$run" > "$out/runs/$run.log" 2>&1; then
                break
              fi
              cp "$out/runs/$run.log" "$out/runs/$run.failed-$try.log"
              if [ $try = 2 ]; then
                echo "merging.sh: run $run failed twice; its logs: $out/runs/$run.failed-*.log" >&2
                exit 1
              fi
              echo "merging.sh: run $run failed; trying once more ($out/runs/$run.failed-1.log)" | tee -a "$log"
            done
            echo "$(date +%T) $run: $(( $(date +%s) - t0 )) s" | tee -a "$log"
          done
        done
      done
    done
  done
fi
python3 "$here/scripts/experiments/merging_report.py" --out "$out" --models "$models" \
  --algos "$algos" --networks "$networks" --servers "$servers_list" --workers "$workers" \
  --bin "$bin"
