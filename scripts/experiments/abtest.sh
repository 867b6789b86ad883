#!/usr/bin/env bash
# abtest.sh: two builds of ordo side by side, alternated (A B B A ...) so that a drift of the
# machine falls on both: ordo-bench pushpull (ordo's Gbit/s at 1 MiB and 4 MiB) and the main
# job's throughput (mlp and cnn on Fashion-MNIST, 2 and 4 workers, samples/s from each run's
# summary.json; synthetic jobs under ssp or asp with a third field: "synthetic:3:ssp"). Prints one markdown table of medians with the ratio B / A and the load
# average before and after. Used for "no loss of speed" checks of a refactoring.
#
#   scripts/experiments/abtest.sh [--reps N] [--iters N] [--jobs "mlp:2 cnn:4 synthetic:3:asp"] BIN_A BIN_B
#
# BIN_A and BIN_B are folders holding ordo-scheduler, ordo-server, ordo-worker and ordo-bench.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
usage() {
  echo "usage: scripts/experiments/abtest.sh [--reps N] [--iters N] [--jobs \"mlp:2 cnn:4\"] BIN_A BIN_B"
}
reps=3 iters=300 jobs="mlp:2 mlp:4 cnn:2 cnn:4 synthetic:3:ssp synthetic:3:asp" bins=()
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --reps) reps=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -*) echo "abtest: unknown argument $1" >&2; usage >&2; exit 2 ;;
    *) bins+=("$1"); shift ;;
  esac
done
[ ${#bins[@]} -eq 2 ] || { usage >&2; exit 2; }
A=$(cd "${bins[0]}" && pwd) B=$(cd "${bins[1]}" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
load0=$(load)

# job BIN TRAINER WORKERS [SYNC_MODE]: one run's samples/s
job() {
  local out="$T/runs-$RANDOM" sync=()
  [ -n "${4:-}" ] && sync=(--sync.mode="$4")
  (cd "$here" && timeout 600 bash scripts/ordo-launch "conf/$2.ini" --bin "$1" \
    --cluster.workers="$3" "${sync[@]}" --model.epochs=0 --model.iterations="$iters" \
    --output.dir="$out" --output.progress_every=0) > "$T/job.log" 2>&1 ||
    { echo "abtest: a $2 run with $1 failed:" >&2; tail -n 20 "$T/job.log" >&2; exit 1; }
  # samples/s; a synthetic job has no samples: its iterations/s (1000 / mean step ms)
  python3 -c 'import json,sys,glob
s = json.load(open(glob.glob(sys.argv[1] + "/*/summary.json")[0]))
print(s["throughput_samples_per_s"] or 1000 / s["step_ms"]["mean"])' "$out"
}
# bench BIN SIZE: ordo's Gbit/s for one message size (fused push+pull round trips)
bench() {
  "$1/ordo-bench" pushpull --json --reps 5 --min "$2" --max "$2" 2>/dev/null |
    python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["ordo_gbps"])'
}

declare -A got
for ((r = 0; r < reps; r++)); do
  order="A B"; [ $((r % 2)) = 1 ] && order="B A"
  for side in $order; do
    bin=$A; [ "$side" = B ] && bin=$B
    for size in 1048576 4194304; do
      v=$(bench "$bin" $size)
      got["bench$size $side"]+=" $v"
      echo "abtest: run $r $side pushpull $size: $v Gbit/s" >&2
    done
    for j in $jobs; do
      IFS=: read -r trainer workers mode <<< "$j"
      v=$(job "$bin" "$trainer" "$workers" "$mode")
      got["${j} $side"]+=" $v"
      echo "abtest: run $r $side $j: $v samples/s" >&2
    done
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
echo "| measure | A | B | B / A |"
echo "|---|---|---|---|"
for key in bench1048576 bench4194304 $jobs; do
  a=$(echo "${got[$key A]}" | median) b=$(echo "${got[$key B]}" | median)
  case $key in
    bench*) name="ordo-bench pushpull $((${key#bench} / 1048576)) MiB (Gbit/s)" ;;
    *) IFS=: read -r trainer workers mode <<< "$key"
       unit=samples/s; [ "$trainer" = synthetic ] && unit=iterations/s
       name="$trainer, $workers workers${mode:+, $mode} ($unit)" ;;
  esac
  printf '| %s | %s | %s | %.3f |\n' "$name" "$a" "$b" "$(python3 -c "print($b / $a)")"
done
echo
echo "A = $A, B = $B; medians of $reps alternated runs, $iters iterations each;" \
  "load average $load0 before, $(load) after"
