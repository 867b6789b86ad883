#!/usr/bin/env python3
"""ordering_report.py: ordering.csv and the PNG plots of scripts/experiments/ordering.sh.

For every run OUT/runs/MODEL-POLICY-PASS it reads summary.json and metrics.jsonl, and from
`ordo-plan bounds` (one worker's share of the server's link, the run's scaled op times) the
simulated best makespan and the bounds U and L. Columns of ordering.csv:
model, policy, pass, throughput (samples/s, all workers, after warm-up),
simulated_best_throughput (workers x batch / simulated best makespan),
normalized_throughput (their ratio), efficiency_mean (E = (U - t) / (U - L) of each worker's
measured forward time t, clipped to [0, 1], averaged), straggler_effect (summary.json),
step_ms_mean, p50, p95 (summary.json), compute_scale.
Plots (gnuplot): throughput-PASS.png, efficiency.png, straggler-PASS.png, cdf-MODEL.png.
"""
import argparse
import csv
import json
import math
import os
import re
import subprocess
import sys

from plots import clustered_bars  # this folder, on sys.path as the script's own

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--bin", required=True)
ap.add_argument("--workers", type=int, default=4)
ap.add_argument("--bandwidth", default="1gbit")
ap.add_argument("--latency-us", default="100")
ap.add_argument("--models", required=True)
ap.add_argument("--policies", required=True)
ap.add_argument("--passes", required=True)
ap.add_argument("--models-dir", required=True)
a = ap.parse_args()
models, policies, passes = a.models.split(), a.policies.split(), a.passes.split()


def rate_bps(s):
    num, unit = re.fullmatch(r"([0-9.]+)([a-z]*)", s).groups()
    return float(num) * {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}[unit]


# one worker's fair share of the server's link
share = "%dkbit" % round(rate_bps(a.bandwidth) / a.workers / 1e3)
scales = {}
for line in open(os.path.join(a.out, "scales.txt")):
    m, s = line.split()
    scales[m] = s


def bounds(model, backward):
    cmd = [os.path.join(a.bin, "ordo-plan"), "bounds", "--bandwidth", share, "--latency-us",
           a.latency_us, "--oracle", os.path.join(a.out, "oracles", model + ".json"),
           "--budget-ms", "500", os.path.join(a.models_dir, model + ".json")]
    if backward:
        cmd.insert(2, "--backward")
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


rows, steps = [], {}
for m in models:
    prof = json.load(open(os.path.join(a.models_dir, m + ".json")))
    fwd_b = bounds(m, False)
    for ps in passes:
        b = fwd_b if ps == "forward" else bounds(m, True)
        best_tput = a.workers * prof["batch"] / (b["best_us"] / 1e6)
        for pol in policies:
            run = os.path.join(a.out, "runs", "%s-%s-%s" % (m, pol, ps))
            if not os.path.exists(os.path.join(run, "summary.json")):
                print("ordering_report: no %s/summary.json; skipped" % run, file=sys.stderr)
                continue
            s = json.load(open(os.path.join(run, "summary.json")))
            warm = s["warmup"]
            recs = [json.loads(l) for l in open(os.path.join(run, "metrics.jsonl"))]
            recs = [r for r in recs if r["iter"] >= warm]
            U, L = fwd_b["U_us"] / 1e3, fwd_b["L_us"] / 1e3
            effs = [min(1.0, max(0.0, (U - r["forward_ms"]) / (U - L))) if U > L else 1.0
                    for r in recs]
            steps[(m, pol, ps)] = sorted(r["step_ms"] / (b["best_us"] / 1e3) for r in recs)
            tput = s["throughput_samples_per_s"]
            rows.append({"model": m, "policy": pol, "pass": ps,
                         "throughput": round(tput, 3),
                         "simulated_best_throughput": round(best_tput, 3),
                         "normalized_throughput": round(tput / best_tput, 4),
                         "efficiency_mean": round(sum(effs) / len(effs), 4),
                         "straggler_effect": round(s["straggler_effect"], 4),
                         "step_ms_mean": round(s["step_ms"]["mean"], 2),
                         "p50": round(s["step_ms"]["p50"], 2),
                         "p95": round(s["step_ms"]["p95"], 2),
                         "compute_scale": scales.get(m, "")})

csv_path = os.path.join(a.out, "ordering.csv")
with open(csv_path, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()) if rows else ["model"])
    w.writeheader()
    w.writerows(rows)
print("ordering_report: %d rows in %s" % (len(rows), csv_path))


# ---- plots -------------------------------------------------------------------------------
def value(m, pol, ps, key):
    for r in rows:
        if (r["model"], r["policy"], r["pass"]) == (m, pol, ps):
            return r[key]
    return "NaN"


def bars(name, key, ps, ylabel, title):
    dat = os.path.join(a.out, name + ".dat")
    with open(dat, "w") as f:
        f.write("# model " + " ".join(policies) + "\n")
        for m in models:
            f.write(m + " " + " ".join(str(value(m, p, ps, key)) for p in policies) + "\n")
    return clustered_bars(os.path.join(a.out, name + ".png"), title, ylabel, dat, policies)


scripts = []
for ps in passes:
    label = "forward pass" if ps == "forward" else "forward + backward"
    scripts.append(bars("throughput-" + ps, "normalized_throughput", ps,
                        "throughput / simulated best",
                        "Throughput normalised to the simulated best (%s)" % label))
    scripts.append(bars("straggler-" + ps, "straggler_effect", ps, "straggler effect",
                        "Straggler effect: longest wait for the slowest worker / iteration (%s)"
                        % label))
if "forward" in passes:
    scripts.append(bars("efficiency", "efficiency_mean", "forward", "ordering efficiency E",
                        "Ordering efficiency of the forward pass (1 = best order, 0 = worst)"))
    for m in models:
        dat = os.path.join(a.out, "cdf-%s.dat" % m)
        plots = []
        with open(dat, "w") as f:
            for i, pol in enumerate(policies):
                xs = steps.get((m, pol, "forward"), [])
                f.write("# %s\n" % pol)
                for k, x in enumerate(xs):
                    f.write("%.5f %.5f\n" % (x, (k + 1) / len(xs)))
                f.write("\n\n")
                plots.append("'%s' index %d using 1:2 with steps lw 2 title '%s'" % (dat, i, pol))
        scripts.append("""reset
set terminal pngcairo size 640,440 noenhanced
set output '%s'
set title '%s forward pass: step time CDF'
set xlabel 'step time / simulated best makespan'
set ylabel 'fraction of worker-iterations'
set key bottom right
set grid
set yrange [0:1.02]
plot %s
""" % (os.path.join(a.out, "cdf-%s.png" % m), m, ", ".join(plots)))

gp = os.path.join(a.out, "plots.gp")
with open(gp, "w") as f:
    f.write("\n".join(scripts))
try:
    subprocess.run(["gnuplot", gp], check=True)
    print("ordering_report: plots in %s" % a.out)
except (OSError, subprocess.CalledProcessError) as e:
    print("ordering_report: gnuplot failed (%s); the CSV is written" % e, file=sys.stderr)
    sys.exit(1)
