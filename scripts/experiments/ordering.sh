#!/usr/bin/env bash
# ordering.sh: the transfer-ordering experiments (TicTac's figures 8 and 9). One server and
# four workers on an emulated 1 Gbit/s link run each model's forward pass, then its forward
# and backward passes, under each ordering policy; then ordering_report.py writes
# ordering.csv and the PNG plots (gnuplot) into the output folder.
#
# usage: scripts/experiments/ordering.sh [OPTIONS]
#   --iterations N      measured iterations per run, after 1 warm-up (default 4)
#   --models LIST       comma or space list (default alexnet,vgg16,inception_v2,resnet50,par32,seq32)
#   --policies LIST     default none,tio,tao,search
#   --passes LIST       forward and/or training (default forward,training)
#   --workers W         default 4
#   --bandwidth RATE    emulated link, tc style (default 1gbit)
#   --compute-ratio R   compute_scale per model so that the forward compute is R times the
#                       time the shared link needs for the model's pulls (default 0.5), as
#                       the paper picks batch sizes that make ordering matter
#   --out DIR           output folder (default runs/ordering-DATE)
#   --bin DIR           binaries (default build/bin)
#   --report-only       only (re)write the CSV and plots from DIR's runs
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
iters=4
models="alexnet,vgg16,inception_v2,resnet50,par32,seq32"
policies="none,tio,tao,search"
passes="forward,training"
workers=4
bandwidth=1gbit
ratio=0.5
out=""
bin="$here/build/bin"
report_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --iterations) iters=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --policies) policies=$2; shift 2 ;;
    --passes) passes=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --bandwidth) bandwidth=$2; shift 2 ;;
    --compute-ratio) ratio=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --report-only) report_only=1; shift ;;
    *) echo "ordering.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || out="$here/runs/ordering-$(date +%Y%m%d-%H%M%S)"
models=${models//,/ }
policies=${policies//,/ }
passes=${passes//,/ }
[[ "$iters" =~ ^[1-9][0-9]*$ ]] || { echo "ordering.sh: --iterations must be a positive integer" >&2; exit 2; }
for b in ordo-plan ordo-scheduler ordo-server ordo-worker; do
  [ -x "$bin/$b" ] || { echo "ordering.sh: $bin/$b is not built (scripts/build.sh)" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "ordering.sh: needs python3" >&2; exit 2; }
mkdir -p "$out/runs" "$out/oracles"
log="$out/ordering.log"

# per model: compute_scale and an oracle file of the scaled op times (for the simulator)
scale_of() {
  python3 - "$here/conf/models/$1.json" "$out/oracles/$1.json" "$workers" "$bandwidth" "$ratio" <<'EOF'
import json, math, re, sys
m = json.load(open(sys.argv[1]))
workers, ratio = int(sys.argv[3]), float(sys.argv[5])
num, unit = re.fullmatch(r"([0-9.]+)([a-z]*)", sys.argv[4]).groups()
bps = float(num) * {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}[unit]
comm_ms = workers * sum(math.prod(p["shape"]) * 4 for p in m["params"]) * 8 / bps * 1e3
fwd_ms = sum(o["fwd_us"] for o in m["ops"]) / 1e3
s = max(1, round(ratio * comm_ms / fwd_ms))
json.dump({"format": "ordo-oracle/1", "model": m["name"],
           "ops": [{"name": o["name"], "fwd_us": o["fwd_us"] * s, "bwd_us": o["bwd_us"] * s}
                   for o in m["ops"]]}, open(sys.argv[2], "w"))
print(s)
EOF
}

if [ $report_only = 0 ]; then
  echo "ordering: $iters iterations (+1 warm-up), models: $models; policies: $policies;" \
       "passes: $passes; $workers workers, 1 server, $bandwidth; output $out" | tee -a "$log"
  for m in $models; do
    [ -f "$here/conf/models/$m.json" ] || { echo "ordering.sh: no profile conf/models/$m.json" >&2; exit 2; }
    scale=$(scale_of "$m")
    echo "$m $scale" >> "$out/scales.txt"
    for pass in $passes; do
      case $pass in forward) fwd=true ;; training) fwd=false ;;
        *) echo "ordering.sh: unknown pass $pass" >&2; exit 2 ;; esac
      for pol in $policies; do
        run="$m-$pol-$pass"
        t0=$(date +%s)
        if ! "$here/scripts/ordo-launch" "$here/conf/experiments/ordering.ini" --bin "$bin" \
            "--model.file=$here/conf/models/$m.json" "--model.compute_scale=$scale" \
            "--model.iterations=$((iters + 1))" --model.warmup=1 "--model.forward_only=$fwd" \
            "--order.policy=$pol" "--cluster.workers=$workers" "--net.bandwidth=$bandwidth" \
            "--output.dir=$out/runs" "--output.run=$run" > "$out/runs/$run.log" 2>&1; then
          echo "ordering.sh: run $run failed; its log: $out/runs/$run.log" >&2
          exit 1
        fi
        echo "$(date +%T) $run (compute_scale $scale): $(( $(date +%s) - t0 )) s" | tee -a "$log"
      done
    done
  done
fi
python3 "$here/scripts/experiments/ordering_report.py" --out "$out" --bin "$bin" \
  --workers "$workers" --bandwidth "$bandwidth" --models "$models" --policies "$policies" \
  --passes "$passes" --models-dir "$here/conf/models"
