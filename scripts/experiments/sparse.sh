#!/usr/bin/env bash
# sparse.sh: the sparse-push experiments. Two servers and four workers on an emulated
# 1 Gbit/s link train the mlp and the cnn on Fashion-MNIST with dense pushes and with sparse
# (top-k) pushes at densities 2%, 1% and 0.1%; then sparse_report.py writes sparse.csv
# (one row per run), curves.csv (train accuracy against time) and the PNG plots (gnuplot)
# into the output folder.
#
# usage: scripts/experiments/sparse.sh [OPTIONS]
#   --models LIST             comma or space list (default mlp,cnn)
#   --densities LIST          dense and/or fractions (default dense,0.02,0.01,0.001)
#   --epochs N                epochs per run (default 3)
#   --workers W               default 4
#   --servers S               default 2
#   --bandwidth RATE          emulated link, tc style (default 1gbit)
#   --latency-us US           emulated one-way latency (default 100)
#   --threshold-period T      [push] threshold_period (default 8)
#   --repartition-period T    [push] repartition_period (default 64)
#   --out DIR                 output folder (default runs/sparse-DATE)
#   --bin DIR                 binaries (default build/bin)
#   --report-only             only (re)write the CSVs and plots from DIR's runs
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
models="mlp,cnn"
densities="dense,0.02,0.01,0.001"
epochs=3
workers=4
servers=2
bandwidth=1gbit
latency=100
tperiod=8
rperiod=64
out=""
bin="$here/build/bin"
report_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --models) models=$2; shift 2 ;;
    --densities) densities=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --servers) servers=$2; shift 2 ;;
    --bandwidth) bandwidth=$2; shift 2 ;;
    --latency-us) latency=$2; shift 2 ;;
    --threshold-period) tperiod=$2; shift 2 ;;
    --repartition-period) rperiod=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --report-only) report_only=1; shift ;;
    *) echo "sparse.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || out="$here/runs/sparse-$(date +%Y%m%d-%H%M%S)"
models=${models//,/ }
densities=${densities//,/ }
for n in "$epochs" "$workers" "$servers" "$tperiod" "$rperiod"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "sparse.sh: $n is not a positive integer" >&2; exit 2; }
done
for m in $models; do
  [ "$m" = mlp ] || [ "$m" = cnn ] || { echo "sparse.sh: model $m is not mlp or cnn" >&2; exit 2; }
done
for d in $densities; do
  [ "$d" = dense ] || python3 -c "import sys; d = float(sys.argv[1]); sys.exit(not 0 < d <= 1)" "$d" \
    2>/dev/null || { echo "sparse.sh: density $d is not 'dense' or in (0, 1]" >&2; exit 2; }
done
for b in ordo-scheduler ordo-server ordo-worker; do
  [ -x "$bin/$b" ] || { echo "sparse.sh: $bin/$b is not built (scripts/build.sh)" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "sparse.sh: needs python3" >&2; exit 2; }
mkdir -p "$out/runs"
log="$out/sparse.log"

run_name() { # MODEL DENSITY
  if [ "$2" = dense ]; then echo "$1-dense"; else echo "$1-d$2"; fi
}

if [ $report_only = 0 ]; then
  echo "sparse: models $models; densities $densities; $epochs epochs; $servers servers," \
       "$workers workers, $bandwidth, ${latency} us; threshold period $tperiod, repartition" \
       "period $rperiod; output $out" | tee -a "$log"
  for m in $models; do
    for d in $densities; do
      name=$(run_name "$m" "$d")
      args=(--cluster.servers="$servers" --cluster.workers="$workers" --model.epochs="$epochs"
            --net.bandwidth="$bandwidth" --net.latency_us="$latency" --output.dir="$out/runs"
            --output.run="$name" --output.progress_every=100)
      if [ "$d" != dense ]; then
        args+=(--push.mode=sparse --push.density="$d" --push.threshold_period="$tperiod"
               --push.repartition_period="$rperiod")
      fi
      start=$(date +%s)
      if ! "$here/scripts/ordo-launch" "$here/conf/$m.ini" --bin "$bin" "${args[@]}" \
           > "$out/runs/$name.log" 2>&1; then
        echo "sparse: run $name failed; its log: $out/runs/$name.log" | tee -a "$log" >&2
        tail -n 20 "$out/runs/$name.log" >&2
        exit 1
      fi
      acc=$(grep -o 'test accuracy [0-9.]*' "$out/runs/$name.log" | tail -1)
      echo "sparse: $name done in $(( $(date +%s) - start )) s ($acc)" | tee -a "$log"
    done
  done
fi
python3 "$here/scripts/experiments/sparse_report.py" --out "$out" --models "$models" \
  --densities "$densities"
