#!/usr/bin/env bash
# tta.sh: time to accuracy through ordo.torch against PyTorch DDP and its compression hooks
# (docs/compression.md; results in docs/results/compression.md). It runs torch.sh's ddp part
# (network namespaces: 2 server hosts, 2 worker hosts of 2 workers, every host's link shaped
# to --bandwidth each way) in its time-to-accuracy mode: the VGG-style net at --width on
# Fashion-MNIST (He's initialisation), --batch per worker, the same optimizer in every setting
# (SGD, lr --lr, momentum 0.9: the update ordo's server mode and sparse path run on the
# servers), each run training until the test accuracy (the first 2000 test images, every
# --eval-every steps) reaches --target, at most --steps steps; then tabulates every run's wall
# time to the target (with and without its evaluations), its steps, its final accuracy, its
# median step and the bytes at its worker hosts' interfaces, and compares the fastest ordo
# setting with the fastest DDP one (tta.md and tta.csv in the output folder).
# At the defaults (width 0.25: 0.61 M parameters, 2.4 MB; 100 Mbit/s) DDP's float32
# all-reduce moves 1.5 models per worker host each way, about 0.3 s a step on the link, most
# of its step. The default sweep: DDP float32, with its bf16 hook and with PowerSGD; ordo in
# host groups with bf16 (0.5 models each way; gradients mode, and server mode with the order
# planned from the model, tao, greedy), in server mode with onebit pushes and onebit pulls of
# the change (pull=delta: 1/32 each way), and Ok-Topk's sparse path at 1 % (flat workers).
# A run takes 1 to 4 minutes, the sweep about 12 on a quiet 2-core machine.
#
# usage: scripts/experiments/tta.sh [OPTIONS]   (needs root, iproute2, tbf; torch.sh's needs)
#   --variants LIST   torch.sh's ddp variants (default: the sweep above)
#   --target A        test accuracy to reach (default 0.75)
#   --steps N         at most N steps a run (default 400)
#   --eval-every N    steps between evaluations (default 10)
#   --lr X            SGD's learning rate (default 0.02)
#   --bandwidth RATE  each host's link each way (default 100mbit)
#   --width X         the VGG-style net's width factor (default 0.25)
#   --batch B         samples per worker and step (default 16)
#   --out DIR         output folder (default runs/tta-DATE)
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
variants=ddp,ddp-bf16,ddp-powersgd,ordo-gradients-none-groups-cbf16
variants+=,ordo-server-tao-greedy-groups-cbf16,ordo-server-none-groups-conebit+pull=delta
variants+=,ordo-server-none-coktopk_0.01
target=0.75
steps=400
every=10
lr=0.02
bw=100mbit
width=0.25
batch=16
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    --variants) variants=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --eval-every) every=$2; shift 2 ;;
    --lr) lr=$2; shift 2 ;;
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
    --target-acc "$target" --eval-every "$every" --optimizer sgd --lr "$lr" --init he \
    --variants "$variants" --out "$out"; then
  echo "tta.sh: torch.sh failed (a run, or its report: $out/torch.log); the table has what ran" >&2
fi
"$py" - "$out" "$variants" "$target" "$bw" "$width" "$batch" "$lr" "$every" <<'PYEOF'
import json, os, statistics, sys
out, variants, target, bw, width, batch, lr, every = sys.argv[1:]


def record(v):
    """tta0.json of run v, with its median step (worker 0, after the warm-up) and its worker
    hosts' interface bytes per step each way in models (netRANK.json, mean over workers)."""
    d = os.path.join(out, "runs", f"ddp-vgg-{v}")
    p = os.path.join(d, "tta0.json")
    if not os.path.exists(p):
        return None
    r = json.load(open(p))
    steps = [json.loads(x)["step_ms"] for x in open(os.path.join(d, "worker0.jsonl"))
             if not json.loads(x)["warmup"]]
    r["step_ms"] = statistics.median(steps) if steps else float("nan")
    tx, rx = [], []
    for n in sorted(f for f in os.listdir(d) if f.startswith("net") and f.endswith(".json")):
        q = json.load(open(os.path.join(d, n)))
        if q["iterations"] > 0:
            tx.append(q["tx_bytes"] / q["iterations"] / q["model_bytes"])
            rx.append(q["rx_bytes"] / q["iterations"] / q["model_bytes"])
    ev = [e for e in r["evals"] if len(e) >= 4]  # [step, acc, wall s, CPU s]
    r["eval_wall"] = statistics.mean(e[2] for e in ev) if ev else float("nan")
    r["eval_cpu"] = statistics.mean(e[3] for e in ev) if ev else float("nan")
    r["tx"] = statistics.mean(tx) if tx else float("nan")
    r["rx"] = statistics.mean(rx) if rx else float("nan")
    return r


rows = [(v, record(v)) for v in variants.split(",")]
load = open("/proc/loadavg").read().split()[:3]
with open(os.path.join(out, "tta.csv"), "w") as f:
    f.write("variant,reached,steps,wall_s,train_s,accuracy,step_ms,host_tx_models,"
            "host_rx_models,eval_wall_s,eval_cpu_s\n")
    for v, d in rows:
        if d:
            f.write(f"{v},{int(d['reached'])},{d['steps']},{d['wall_s']},{d['train_s']},"
                    f"{d['accuracy']},{d['step_ms']},{d['tx']:.4f},{d['rx']:.4f},"
                    f"{d['eval_wall']:.3f},{d['eval_cpu']:.3f}\n")
lines = [f"Time to {float(target):.0%} test accuracy: VGG-style net, width {width}, batch {batch} "
         f"per worker, SGD lr {lr} momentum 0.9 in every setting, evaluated every {every} "
         f"steps, 2 worker hosts x 2, 2 server hosts, {bw} links; load average at the end "
         f"{' '.join(load)}.", "",
         "| setting | reached | steps | wall s | s without evaluations | final accuracy | "
         "median step ms | host models/step out / in | an evaluation: wall s / CPU s |",
         "|---|---|---:|---:|---:|---:|---:|---|---|"]
for v, d in rows:
    if d is None:
        lines.append(f"| {v} | no record | | | | | | | |")
    else:
        lines.append(f"| {v} | {'yes' if d['reached'] else 'no'} | {d['steps']} | "
                     f"{d['wall_s']:.1f} | {d['train_s']:.1f} | {d['accuracy']:.4f} | "
                     f"{d['step_ms']:.0f} | {d['tx']:.3f} / {d['rx']:.3f} | "
                     f"{d['eval_wall']:.2f} / {d['eval_cpu']:.2f} |")
lines.append("")
for key, what in (("wall_s", "wall time"), ("train_s", "time without evaluations")):
    best = {}
    for side in ("ddp", "ordo"):
        done = [(d[key], v) for v, d in rows if d and d["reached"] and v.split("-")[0] == side]
        best[side] = min(done) if done else None
    if best["ddp"] and best["ordo"]:
        ratio = best["ddp"][0] / best["ordo"][0]
        lines.append(f"By {what}: the best ordo setting ({best['ordo'][1]}, {best['ordo'][0]:.1f} s) "
                     f"against the best DDP one ({best['ddp'][1]}, {best['ddp'][0]:.1f} s): "
                     f"{ratio:.2f}x (goal: 1.3x, {'met' if ratio >= 1.3 else 'not met'}).")
    else:
        lines.append(f"By {what}: no comparison (a side has no run that reached the target).")
open(os.path.join(out, "tta.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PYEOF
