#!/usr/bin/env bash
# compression.sh: the wire codecs ([push] compression, docs/compression.md) measured two ways.
#  bench     ordo-bench pushpull --compression: values per second, bytes per value each way and
#            CPU per value of every codec beside float32, clusters taking turns on loopback.
#  accuracy  time to accuracy through ordo-worker: the cnn (or mlp) trains on Fashion-MNIST
#            with 2 servers and the workers on an emulated link ([net] bandwidth, each
#            process's egress) once per codec; worker 0 evaluates every --eval-every
#            iterations and summary.json says when it first reached --target. The table gives
#            the wall time to the target, the final accuracy, the bytes per iteration and the
#            throughput of each codec, with the load average at the start of each run.
# Output: OUT/table.md (both tables) and OUT/runs/RUN/ (each run's folder).
#
# usage: scripts/experiments/compression.sh [OPTIONS]
#   --parts LIST        bench,accuracy (default both)
#   --codecs LIST       space-separated specs (default "none bf16 fp16 onebit topk:0.01")
#   --model M           cnn or mlp (default cnn)
#   --epochs N          default 2
#   --workers W         default 2 (--groups L: hosts of L workers in shared-memory groups)
#   --groups L          default 1 (flat)
#   --bandwidth RATE    the emulated link (default 100mbit)
#   --target ACC        the test accuracy the time is taken to (default 0.85)
#   --eval-every N      iterations between worker 0's evaluations (default 25)
#   --out DIR           output folder (default runs/compression-DATE)
#   --bin DIR           binaries (default build/bin)
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
parts="bench,accuracy"
codecs="none bf16 fp16 onebit topk:0.01"
model=cnn
epochs=2
workers=2
groups=1
bandwidth=100mbit
target=0.85
every=25
out=""
bin="$here/build/bin"
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --parts) parts=$2; shift 2 ;;
    --codecs) codecs=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --groups) groups=$2; shift 2 ;;
    --bandwidth) bandwidth=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    --eval-every) every=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "compression.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || out="$here/runs/compression-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out/runs"
table="$out/table.md"
{
  echo "# compression.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -r)"
  echo
} > "$table"

if [[ ,$parts, == *,bench,* ]]; then
  list=$(echo "$codecs" | tr ' ' '\n' | grep -v '^none$' | tr '\n' ' ')
  echo "## ordo-bench pushpull --compression '$list' (load $(cut -d' ' -f1-3 /proc/loadavg))" >> "$table"
  echo '```' >> "$table"
  "$bin/ordo-bench" pushpull --compression "$list" --min 256KiB --max 16MiB | tee -a "$table"
  echo '```' >> "$table"
  echo >> "$table"
fi

if [[ ,$parts, == *,accuracy,* ]]; then
  intra=()
  [ "$groups" -gt 1 ] && intra=(--cluster.local_size="$groups" --intra.backend=shm)
  echo "## time to $target test accuracy: $model, $workers workers, 2 servers, $bandwidth emulated, $epochs epochs" >> "$table"
  echo >> "$table"
  echo "| codec | time to $target (s) | final accuracy | wall (s) | samples/s | bytes/iter/worker | load at start |" >> "$table"
  echo "|---|---:|---:|---:|---:|---:|---|" >> "$table"
  for c in $codecs; do
    run="$model-${c//[:,=]/_}"
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    echo "$(date +%T) $run" >&2
    "$here/scripts/ordo-launch" "$here/conf/$model.ini" --bin "$bin" --output.dir="$out/runs" \
      --output.run="$run" --cluster.workers="$workers" --model.epochs="$epochs" \
      --net.bandwidth="$bandwidth" --model.target_accuracy="$target" \
      --model.eval_every="$every" --model.eval_samples=2000 --push.compression="$c" \
      "${intra[@]}" > "$out/runs/$run.log" 2>&1 ||
      { echo "compression.sh: $run failed; see $out/runs/$run.log" >&2; exit 1; }
    python3 - "$out/runs/$run/summary.json" "$c" "$load" >> "$table" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
ttt = s.get("time_to_target_s")
print(f"| {sys.argv[2]} | {ttt:.1f} |" if isinstance(ttt, (int, float)) else f"| {sys.argv[2]} | not reached |",
      f"{100 * s['test_accuracy']:.2f} % | {s['wall_s']:.1f} | {s['throughput_samples_per_s']:.0f} |",
      f"{s['bytes_per_iter']:.0f} | {sys.argv[3]} |")
PY
  done
fi
cat "$table"
