#!/usr/bin/env bash
# tta.sh: time to accuracy through ordo.torch against PyTorch DDP and its compression hooks
# (docs/compression.md; results in docs/results/compression.md). It runs torch.sh's ddp part
# (network namespaces: 2 server hosts, 2 worker hosts of 2 workers, every host's link shaped
# to --bandwidth each way) in its time-to-accuracy mode: the VGG-style net at --width on
# Fashion-MNIST, --batch per worker, Adam (lr 1e-3) in every setting, each run training until
# the test accuracy (the first 2000 test images, every 25 steps) reaches --target, at most
# --steps steps; then tabulates every run's wall time to the target, its steps and its final
# accuracy (tta.md and tta.csv in the output folder). At the defaults (width 0.25: 0.61 M
# parameters, 2.4 MB; 100 Mbit/s) DDP's float32 all-reduce moves 1.5 models per worker host
# each way, about 0.3 s a step on the link, several times the step's compute here. A run
# takes a few minutes; the default sweep about 20 on a quiet 2-core machine.
#
# usage: scripts/experiments/tta.sh [OPTIONS]   (needs root, iproute2, tbf; torch.sh's needs)
#   --variants LIST   torch.sh's ddp variants (default ddp,ddp-bf16,ddp-powersgd,
#                     ordo-gradients-none-groups-cbf16,ordo-gradients-none-groups-conebit)
#   --target A        test accuracy to reach (default 0.72)
#   --steps N         at most N steps a run (default 600)
#   --bandwidth RATE  each host's link each way (default 100mbit)
#   --width X         the VGG-style net's width factor (default 0.25)
#   --batch B         samples per worker and step (default 16)
#   --out DIR         output folder (default runs/tta-DATE)
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
variants=ddp,ddp-bf16,ddp-powersgd,ordo-gradients-none-groups-cbf16,ordo-gradients-none-groups-conebit
target=0.72
steps=600
bw=100mbit
width=0.25
batch=16
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --variants) variants=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --bandwidth) bw=$2; shift 2 ;;
    --width) width=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "tta.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || out="$here/runs/tta-$(date +%Y%m%d-%H%M%S)"
py="${ORDO_PYTHON:-$here/.venv/bin/python}"
# torch.sh's warm-up (7 steps) counts toward the steps: --iterations is what follows it
if ! "$here/scripts/experiments/torch.sh" --parts ddp --models vgg --width "$width" \
    --train-batch "$batch" --ddp-bandwidth "$bw" --iterations $((steps - 7)) \
    --target-acc "$target" --optimizer adam --variants "$variants" --out "$out"; then
  echo "tta.sh: torch.sh failed (a run, or its report: $out/torch.log); the table has what ran" >&2
fi
"$py" - "$out" "$variants" "$target" "$bw" "$width" "$batch" <<'PYEOF'
import json, os, sys
out, variants, target, bw, width, batch = sys.argv[1:]
rows = []
for v in variants.split(","):
    p = os.path.join(out, "runs", f"ddp-vgg-{v}", "tta0.json")
    if not os.path.exists(p):
        rows.append((v, None))
        continue
    rows.append((v, json.load(open(p))))
load = open("/proc/loadavg").read().split()[:3]
with open(os.path.join(out, "tta.csv"), "w") as f:
    f.write("variant,reached,steps,wall_s,train_s,accuracy\n")
    for v, d in rows:
        if d:
            f.write(f"{v},{int(d['reached'])},{d['steps']},{d['wall_s']},{d['train_s']},{d['accuracy']}\n")
lines = [f"Time to {float(target):.0%} test accuracy: VGG-style net, width {width}, batch {batch} "
         f"per worker, 2 worker hosts x 2, 2 server hosts, {bw} links; load average at the end "
         f"{' '.join(load)}.", "",
         "| setting | reached | steps | wall s | s without evaluations | final accuracy |",
         "|---|---|---:|---:|---:|---:|"]
for v, d in rows:
    if d is None:
        lines.append(f"| {v} | no record | | | | |")
    else:
        lines.append(f"| {v} | {'yes' if d['reached'] else 'no'} | {d['steps']} | "
                     f"{d['wall_s']:.1f} | {d['train_s']:.1f} | {d['accuracy']:.4f} |")
open(os.path.join(out, "tta.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PYEOF
