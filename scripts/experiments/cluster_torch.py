#!/usr/bin/env python3
"""cluster_torch: `ordo-plan cluster` against the PyTorch runs of torch.sh's ddp part.

    scripts/experiments/cluster_torch.py DIR [DIR ...] [--plan BIN] [--markdown]

Each DIR is a torch.sh output folder (`--parts ddp`: 2 worker hosts of 2 workers, 2 server
hosts, every link shaped to --ddp-bandwidth; torch.log's first line says the rate). For every
ordo.torch run in host groups that re-planned, the profile it wrote
(`runs/ddp-MODEL-VARIANT/cluster/replan-1-profile.json`: the model's ops as that run measured
them) goes to `ordo-plan cluster` with the run's settings (groups on, tao, the run's codec),
and the predicted step is set beside the measured mean step (torch-ddp.csv). DDP's runs of the
same model are set beside the planner's ring all-reduce of the same profile (bf16 and fp16
hooks as the 16-bit codec; PowerSGD, and onebit with float32 pulls, are not modelled).
Prints one row per run and the distribution of |error| (docs/results/cluster.md).
"""

import argparse
import csv
import glob
import json
import os
import re
import subprocess
import sys

from cluster_report import percentile

WORKERS, PER_HOST, SERVER_HOSTS = 4, 2, 2  # torch.sh's ddp part


def link_of(folder: str) -> str:
    """The link rate torch.sh shaped every host to, from torch.log's first line."""
    with open(os.path.join(folder, "torch.log")) as f:
        m = re.search(r"each link (\S+) each way", f.readline())
    if not m:
        raise SystemExit(f"cluster_torch: {folder}/torch.log: no 'each link RATE each way' "
                         "on its first line (not a torch.sh --parts ddp folder?)")
    return m.group(1)


def codec_of(variant: str) -> str:
    """The wire type of a torch.sh variant: ordo's -cCODEC, DDP's -bf16/-fp16 hook."""
    m = re.search(r"-c([a-z0-9]+)", variant)
    if variant.startswith("ordo"):
        return m.group(1) if m else "none"
    for hook in ("bf16", "fp16"):
        if variant.endswith("-" + hook):
            return "bf16"  # the planner's 16-bit codec: the same bytes and conversions
    return "none"


def plan(binary: str, profile: str, link: str, codec: str) -> dict:
    cmd = [binary, "cluster", "--workers", str(WORKERS), "--workers-per-host", str(PER_HOST),
           "--server-hosts", str(SERVER_HOSTS), "--worker-link", link, "--compression", codec,
           "--groups", "on", "--order", "tao", "--json", profile]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def rows_of(folder: str, binary: str) -> list[dict]:
    link = link_of(folder)
    with open(os.path.join(folder, "torch-ddp.csv")) as f:
        measured = list(csv.DictReader(f))
    profiles = {}
    for p in glob.glob(os.path.join(folder, "runs", "ddp-*", "cluster", "replan-1-profile.json")):
        run = p.split(os.sep)[-3]
        profiles[run] = p
    rows = []
    for m in measured:
        model, system = m["model"], m["system"]
        codec = codec_of(system)
        if system.startswith("ordo"):
            if "-groups" not in system or "-nooverlap" in system:
                continue  # the planner's groups row is the overlapped host-group path
            profile = profiles.get(f"ddp-{model}-{system}")
            if profile is None:
                continue
            if codec not in ("none", "bf16", "fp16", "onebit"):
                continue
            if codec == "onebit" and "pull=delta" not in system:
                continue  # the planner's onebit compresses the pulls too; float32 pulls are
                #           not one of its settings
            pred = plan(binary, profile, link, "bf16" if codec == "fp16" else codec)["ps"]
        elif system.startswith("ddp") and "powersgd" not in system:
            mine = sorted(v for k, v in profiles.items() if k.startswith(f"ddp-{model}-ordo"))
            if not mine:
                continue
            pred = plan(binary, mine[0], link, codec)["ring"]
        else:
            continue
        step = float(m["step_ms_mean"])
        rows.append({"model": model, "link": link, "system": system, "codec": codec,
                     "measured": step, "predicted": pred["step_ms"],
                     "error": (pred["step_ms"] - step) / step})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="ordo-plan cluster against torch.sh's runs.")
    ap.add_argument("folders", nargs="+")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--plan", default=os.path.join(here, "..", "..", "build", "bin", "ordo-plan"))
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args(argv)
    rows = [r for f in a.folders for r in rows_of(f, a.plan)]
    if not rows:
        print("cluster_torch: no run with a profile in " + " ".join(a.folders), file=sys.stderr)
        return 1
    head = ["model", "link", "run", "codec", "model used", "measured ms", "predicted ms",
            "error"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * 4 + "---|" + "---:|" * 3]
    for r in rows:
        used = "PS, host groups, tao" if r["system"].startswith("ordo") else "ring all-reduce"
        out.append(f"| {r['model']} | {r['link']} | {r['system']} | {r['codec']} | {used} | "
                   f"{r['measured']:.0f} | {r['predicted']:.0f} | {r['error'] * 100:+.1f} % |")
    errs = [abs(r["error"]) for r in rows]
    out.append("")
    out.append(f"{len(rows)} runs: |error| median {percentile(errs, 0.5) * 100:.1f} %, 90th "
               f"percentile {percentile(errs, 0.9) * 100:.1f} %, worst {max(errs) * 100:.1f} %")
    text = "\n".join(out)
    print(text if a.markdown else text.replace("| ", "").replace(" |", ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
