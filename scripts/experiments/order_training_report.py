"""order_training_report: the table of scripts/experiments/order_training.sh's results.jsonl.

Per model and point: samples/s of each setting (mean over the repeats, and the range), the
gain of tao and of the layer-index order over the best unordered setting (none, early pulls),
and the step model's step for none and tao and its bound (ordo-plan simulate --workers), as
samples/s, so that measured and modelled read side by side."""
from __future__ import annotations

import argparse
import json
import subprocess
from collections import defaultdict
from pathlib import Path

SETTINGS = ["none_start", "none_early", "layer_index", "tao", "search"]
HERE = Path(__file__).resolve().parents[2]


def modelled(bin_dir: Path, r: dict, policy: str) -> dict:
    """modelled returns the step model's figures for r's point under policy."""
    args = [str(bin_dir / "ordo-plan"), "simulate", "--policy", policy, "--bandwidth", r["bw"],
            "--latency-us", "0", "--servers", str(r["servers"]), "--compute-scale",
            str(r["scale"]), "--workers", str(r["workers"]), "--evals", "2000"]
    if policy == "none":
        args += ["--slice-bytes", "1MiB", "--credit-bytes", "1MiB"]
    args.append(str(HERE / "conf" / "models" / f"{r['model']}.json"))
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return json.loads(out)["step"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--bin", default=str(HERE / "build" / "bin"))
    a = ap.parse_args()
    with open(a.results) as f:
        rows = [json.loads(line) for line in f]
    for r in rows:
        r.setdefault("workers", 2)
    by = defaultdict(lambda: defaultdict(list))
    first = {}
    for r in rows:
        key = (r["model"], r["servers"], r["bw"], r["scale"])
        by[key][r["setting"]].append(r["sps"])
        first.setdefault(key, r)
    print("| model | servers | link | compute | " + " | ".join(SETTINGS) +
          " | tao / none early | layer / none early | model: none, tao, bound | load |")
    print("|" + "---|" * (len(SETTINGS) + 8))
    for key, sets in by.items():
        r = first[key]
        with open(HERE / "conf" / "models" / f"{r['model']}.json") as f:
            batch = json.load(f)["batch"] * r["workers"]  # samples per step
        cells = []
        for s in SETTINGS:
            v = sets.get(s, [])
            cells.append(f"{sum(v) / len(v):.1f} ({min(v):.0f}–{max(v):.0f})" if v else "–")
        mean = {s: sum(v) / len(v) for s, v in sets.items() if v}
        base = mean.get("none_early")
        gain = [f"{mean[s] / base:.2f}×" if base and s in mean else "–"
                for s in ("tao", "layer_index")]
        mn, mt = modelled(Path(a.bin), r, "none"), modelled(Path(a.bin), r, "tao")
        model = (f"{batch / mn['step_us'] * 1e6:.1f}, {batch / mt['step_us'] * 1e6:.1f}, "
                 f"{batch / mt['bound_us'] * 1e6:.1f}")
        loads = [x["load"] for x in rows if (x["model"], x["servers"], x["bw"], x["scale"]) == key]
        print(f"| {key[0]} | {key[1]} | {key[2]} | ×{key[3]:g} | " + " | ".join(cells) +
              f" | {gain[0]} | {gain[1]} | {model} | {min(loads):.0f}–{max(loads):.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
