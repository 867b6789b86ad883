#!/usr/bin/env python3
"""intra_report.py: intra.csv, the PNG plots and intra-table.md of scripts/experiments/intra.sh.

For every run OUT/runs/MODEL-VARIANT-SCENARIO it reads summary.json, metrics.jsonl and
link.json (each host link's byte counters before and after the run). Columns of intra.csv:
model, variant, scenario, step_ms (mean over workers and iterations after the warm-up),
forward_ms (the same for the forward phase: iteration start to the end of the forward pass,
waiting for the values included), speedup (the flat run's step_ms / this one's, same model
and scenario), forward_gain (the hier run's forward_ms / this one's), throughput (samples/s,
summary.json), network_mb_per_iter (summary.json network_bytes_per_iter: every worker's bytes
to and from the servers), h0_tx_mb, h0_rx_mb, h1_tx_mb, h1_rx_mb (each worker host's link,
bytes sent and received per iteration: the counters' difference over the whole run, bring-up
included, divided by the iterations), servers_rx_mb (the server hosts' links together),
straggler_effect (summary.json), intra_reduce_ms, intra_gather_ms (summary.json intra_ms).
Plots (gnuplot, when installed): step-SCENARIO.png, forward-SCENARIO.png, link-SCENARIO.png.
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys

from plots import clustered_bars  # this folder, on sys.path as the script's own

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--models", required=True)
ap.add_argument("--variants", required=True)
ap.add_argument("--scenarios", required=True)
ap.add_argument("--bandwidth", default="1gbit")
a = ap.parse_args()


def split(text):
    return [x for x in text.replace(",", " ").split() if x]


models, variants, scenarios = split(a.models), split(a.variants), split(a.scenarios)
MB = 1e6


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


rows = []
for m in models:
    for sc in scenarios:
        for v in variants:
            run = os.path.join(a.out, "runs", "%s-%s-%s" % (m, v, sc))
            if not os.path.exists(os.path.join(run, "summary.json")):
                print("intra_report: no %s/summary.json; skipped" % run, file=sys.stderr)
                continue
            s = json.load(open(os.path.join(run, "summary.json")))
            recs = [json.loads(line) for line in open(os.path.join(run, "metrics.jsonl"))]
            warm = s.get("warmup", 0)
            iters = 1 + max(r["iter"] for r in recs)
            meas = [r for r in recs if r["iter"] >= warm]
            row = {"model": m, "variant": v, "scenario": sc,
                   "step_ms": round(mean([r["step_ms"] for r in meas]), 2),
                   "forward_ms": round(mean([r["forward_ms"] for r in meas]), 2),
                   "speedup": "", "forward_gain": "",
                   "throughput": round(s.get("throughput_samples_per_s", float("nan")), 3),
                   "network_mb_per_iter": round(s.get("network_bytes_per_iter", 0) / MB, 2)}
            link = os.path.join(run, "link.json")
            if os.path.exists(link):
                lj = json.load(open(link))
                d = {h: [(lj["after"][h][i] - lj["before"][h][i]) / iters / MB for i in (0, 1)]
                     for h in lj["after"]}
                for h in ("h0", "h1"):
                    row[h + "_tx_mb"] = round(d[h][0], 2) if h in d else ""
                    row[h + "_rx_mb"] = round(d[h][1], 2) if h in d else ""
                row["servers_rx_mb"] = round(sum(d[h][1] for h in d if h.startswith("s")), 2)
            intra = s.get("intra_ms") or {}
            row.update({"straggler_effect": round(s.get("straggler_effect") or 0.0, 4),
                        "intra_reduce_ms": round(intra.get("reduce", 0.0), 2),
                        "intra_gather_ms": round(intra.get("gather", 0.0), 2),
                        "iterations": iters, "warmup": warm})
            rows.append(row)

by = {(r["model"], r["scenario"], r["variant"]): r for r in rows}
for r in rows:
    flat = by.get((r["model"], r["scenario"], "flat"))
    hier = by.get((r["model"], r["scenario"], "hier"))
    if flat and r["step_ms"] > 0:
        r["speedup"] = round(flat["step_ms"] / r["step_ms"], 3)
    if hier and r["forward_ms"] > 0:
        r["forward_gain"] = round(hier["forward_ms"] / r["forward_ms"], 3)

fields = ["model", "variant", "scenario", "step_ms", "forward_ms", "speedup", "forward_gain",
          "throughput", "network_mb_per_iter", "h0_tx_mb", "h0_rx_mb", "h1_tx_mb", "h1_rx_mb",
          "servers_rx_mb", "straggler_effect", "intra_reduce_ms", "intra_gather_ms",
          "iterations", "warmup"]
csv_path = os.path.join(a.out, "intra.csv")
with open(csv_path, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore", restval="")
    w.writeheader()
    w.writerows(rows)
print("intra_report: %d rows in %s" % (len(rows), csv_path))

# ---- the Markdown table ----------------------------------------------------------------
# host 1's link: host 0's also carries worker 0's initial values once
md = ["| model | variant | scenario | step ms | speed-up | forward ms | forward gain | "
      "network MB/iter | host 1 link tx / rx MB/iter | straggler effect | intra reduce / "
      "gather ms |", "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
for r in rows:
    md.append("| %s | %s | %s | %.0f | %s | %.0f | %s | %.0f | %s / %s | %.3f | %.0f / %.0f |" % (
        r["model"], r["variant"], r["scenario"], r["step_ms"], r["speedup"], r["forward_ms"],
        r["forward_gain"], r["network_mb_per_iter"], r.get("h1_tx_mb", ""),
        r.get("h1_rx_mb", ""), r["straggler_effect"], r["intra_reduce_ms"],
        r["intra_gather_ms"]))
with open(os.path.join(a.out, "intra-table.md"), "w") as f:
    f.write("\n".join(md) + "\n")
print("\n".join(md))


# ---- plots -------------------------------------------------------------------------------
def bars(name, key, sc, ylabel, title):
    dat = os.path.join(a.out, name + ".dat")
    with open(dat, "w") as f:
        f.write("# model " + " ".join(variants) + "\n")
        for m in models:
            f.write(m + " " + " ".join(str(by[(m, sc, v)][key]) if (m, sc, v) in by else "NaN"
                                       for v in variants) + "\n")
    return clustered_bars(os.path.join(a.out, name + ".png"), title, ylabel, dat, variants, key="top left")


if shutil.which("gnuplot") and rows:
    script = ""
    for sc in scenarios:
        script += bars("step-" + sc, "step_ms", sc, "iteration time (ms)",
                       "iteration time, 2 hosts x 2 workers, %s per host (%s)"
                       % (a.bandwidth, sc))
        script += bars("forward-" + sc, "forward_ms", sc, "forward phase (ms)",
                       "forward phase incl. waiting for values (%s)" % sc)
        script += bars("link-" + sc, "h1_tx_mb", sc, "MB per iteration",
                       "bytes sent on worker host 1 link per iteration (%s)" % sc)
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    print("intra_report: plots in %s" % a.out)
