#!/usr/bin/env python3
"""merging_report.py: merging.csv, merging-summary.csv and the PNG plots of
scripts/experiments/merging.sh.

For every run OUT/runs/MODEL-NET-sS-ALGO-rR it reads metrics.jsonl (the measured iterations,
after the warm-up) and the launcher's log (the scheduler's plan line: groups and predicted
time; the workers' line: messages per iteration). A row is one (model, network, servers,
algorithm) over its repeats. Columns of merging.csv:
model, network, servers, algo, groups, messages (per worker per iteration), predicted_ms
(backward + pushes under the calibrated cost model), iter_ms (the mean over the repeats of
each run's median iteration, an iteration's time being the mean over the workers: a run's
median ignores a stalled iteration, and on the CPU-bound 10 Gbit/s networks a whole run
settles into one of two or three steady states that differ by up to 25 % in how the pulls
overlap other workers' pushes, whatever the plan, so the mean over many runs weighs them as
they occur), iter_ms_se (its standard error over the repeats), iter_ms_min, iter_ms_max (the
least and largest run median over repeats),
nonoverlap_ms (median over repeats of the mean of iteration time - compute time: the
communication that did not overlap compute), vs_fastest (iter_ms / the row group's fastest
iter_ms), repeats, iterations (measured, all repeats), a_us,
b_ns, c_ns (the planner's cost model), startup_share (a * layers / (a * layers + b * bytes): how
much of wfbp's communication the per-message cost is).
best_ms (the fastest single iteration over all repeats, mean over workers: the least disturbed
by other load on the machine), best_vs_fastest (the same ratio on best_ms).
forward_ms and backward_ms split iter_ms (each the mean over the repeats of a run's median, as
iter_ms): forward_ms from the start of an iteration to the end of its forward pass (the pulls
and the forward compute waiting on them), backward_ms the rest (backward compute, the pushes the
plan groups and the wait for their last acknowledgements): the part of the iteration the merge
plan decides. The summary compares optimal's backward_ms with the least of the row
(optimal_backward_vs_fastest_pct).
merging-summary.csv: one line per (model, network, servers): the fastest algorithm,
optimal's time and its distance to the fastest, the better of wfbp and all, and optimal's gain
over it; then the comparison repeated on best_ms, whether optimal's plan is wfbp's (one
group per layer: the two rows then differ only by run-to-run noise), and the algorithms whose
plan is optimal's very plan (optimal_plan_same_as, from ordo-plan merge with the run's cost
model), whose repeats are pooled with optimal's (optimal_pooled_*). Plots (gnuplot): merging-iter-NET.png (iteration time / wfbp's),
merging-nonoverlap-NET.png (non-overlapped communication, ms).
"""
import argparse
import configparser
import csv
import json
import math
import os
import statistics
import subprocess
import sys

from runstats import one_run  # this folder, on sys.path as the script's own

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--models", required=True)
ap.add_argument("--algos", required=True)
ap.add_argument("--networks", required=True)
ap.add_argument("--servers", required=True)
ap.add_argument("--workers", type=int, default=4)
ap.add_argument("--bin", default=None, help="the folder of ordo-plan (default build/bin)")
a = ap.parse_args()
models, algos = a.models.split(), a.algos.split()
networks, servers = a.networks.split(), a.servers.split()
here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))

# time dilation per network (merging.sh --dilate; none in older folders): the runs' times and
# their cost model are K times the emulated network's, and are reported divided by K
dilation = {}
try:
    for line in open(os.path.join(a.out, "dilation.txt")):
        f = line.split()
        if len(f) == 2:
            dilation[f[0]] = int(f[1])
except OSError:
    pass

cal = {}
for line in open(os.path.join(a.out, "calibration.txt")):
    if line.startswith("#") or not line.strip():
        continue
    f = line.split()
    # "NET S A B C how" (older folders: "NET S A B how", no receiver stage)
    c_ns = float(f[4]) if len(f) > 5 else 0.0
    k = dilation.get(f[0], 1)
    cal[f[0], f[1]] = (float(f[2]) / k, float(f[3]) / k, c_ns / k)


# the experiment conf's key layout (ordo-plan merge needs it to count messages as the run)
ini = configparser.ConfigParser(inline_comment_prefixes=(";", "#"))
ini.read(os.path.join(root, "conf", "experiments", "merging.ini"))
layout = [("--partition", ini.get("order", "partition_bytes", fallback="4MiB")),
          ("--segment", ini.get("order", "segment_bytes", fallback="1MiB")),
          ("--margin", ini.get("push", "merge_margin", fallback="0.5"))]


def plan_of(m, algo, a_us, b_ns, c_ns, servers, run=None):
    """the groups (lists of parameter names) of this model, algorithm, cost model and key
    layout: the run's own merge-plan.json when it has one (every merged run writes it), else
    what ordo-plan merge makes (the planner is deterministic; without the pull stage of early
    pulls; the profile's op times under the emulated network's costs, which plans a dilated
    run's groups too), or None when neither can be had"""
    try:
        return json.load(open(os.path.join(run, "merge-plan.json")))["groups"]
    except (TypeError, OSError, ValueError, KeyError):
        pass
    exe = os.path.join(a.bin or os.path.join(root, "build", "bin"), "ordo-plan")
    try:
        out = subprocess.run([exe, "merge", "--algo", algo, "--a", "%.9g" % (a_us * 1e-6),
                              "--b", "%.9g" % (b_ns * 1e-9), "--c", "%.9g" % (c_ns * 1e-9),
                              "--servers", str(servers)] + [x for kv in layout for x in kv] +
                             [os.path.join(root, "conf", "models", m + ".json")],
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out)["groups"]
    except (OSError, subprocess.CalledProcessError, ValueError, KeyError):
        return None


def model_bytes(m):
    d = json.load(open(os.path.join(root, "conf", "models", m + ".json")))
    return sum(math.prod(p["shape"]) * 4 for p in d["params"])


rows = []
for m in models:
    total = model_bytes(m)
    for net in networks:
        for S in servers:
            a_us, b_ns, c_ns = cal.get((net, S), (float("nan"), float("nan"), float("nan")))
            group = []
            for algo in algos:
                reps = []
                r = 1
                first = None
                while True:
                    run = os.path.join(a.out, "runs", "%s-%s-s%s-%s-r%d" % (m, net, S, algo.replace(":", "_"), r))
                    if not os.path.isdir(run):
                        break
                    res = one_run(run, dilation.get(net, 1))
                    if res:
                        reps.append(res)
                        first = first or run
                    r += 1
                if not reps:
                    continue
                it = [x[0] for x in reps]
                samples = [y for x in reps for y in x[6]]
                group.append({
                    "model": m, "network": net, "servers": S, "algo": algo,
                    "groups": reps[0][2], "messages": reps[0][3], "predicted_ms": reps[0][4],
                    "iter_ms": statistics.mean(it),
                    "iter_ms_se": statistics.stdev(it) / math.sqrt(len(it)) if len(it) > 1 else 0.0,
                    "iter_ms_min": min(it),
                    "iter_ms_max": max(it),
                    "nonoverlap_ms": statistics.median([x[1] for x in reps]),
                    "best_ms": min(x[5] for x in reps), "samples": it,
                    "forward_ms": statistics.mean([x[7] for x in reps]),
                    "backward_ms": statistics.mean([x[8] for x in reps]),
                    "repeats": len(reps), "iterations": len(samples),
                    "a_us": a_us, "b_ns": b_ns, "c_ns": c_ns,
                    "plan": plan_of(m, algo, a_us, b_ns, c_ns, S, first) if a_us == a_us else None})
            if not group:
                continue
            fastest = min(g["iter_ms"] for g in group)
            fastest_best = min(g["best_ms"] for g in group)
            layers = next((g["groups"] for g in group if g["algo"] == "wfbp"), float("nan"))
            share = a_us * layers / (a_us * layers + b_ns * 1e-3 * total) if a_us == a_us else float("nan")
            for g in group:
                g["vs_fastest"] = g["iter_ms"] / fastest
                g["best_vs_fastest"] = g["best_ms"] / fastest_best
                g["startup_share"] = share
            rows.append(group)

cols = ["model", "network", "servers", "algo", "groups", "messages", "predicted_ms", "iter_ms",
        "iter_ms_se", "iter_ms_min", "iter_ms_max", "nonoverlap_ms", "vs_fastest", "best_ms", "best_vs_fastest",
        "forward_ms", "backward_ms", "repeats", "iterations", "a_us", "b_ns", "c_ns", "startup_share"]


def fmt(v):
    return ("%.4g" % v) if isinstance(v, float) else str(v)


with open(os.path.join(a.out, "merging.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(cols)
    for group in rows:
        for g in group:
            w.writerow([fmt(g[c]) for c in cols])

scols = ["model", "network", "servers", "fastest", "fastest_ms", "fastest_se_ms", "optimal_ms",
         "optimal_se_ms", "optimal_vs_fastest_pct",
         "best_of_wfbp_all", "best_of_wfbp_all_ms", "optimal_gain_pct", "optimal_nonoverlap_ms",
         "best_of_wfbp_all_nonoverlap_ms", "startup_share", "optimal_within_2pct",
         "optimal_best_vs_fastest_pct", "optimal_best_gain_pct", "optimal_plan_is_wfbp",
         "optimal_pooled_ms", "optimal_pooled_vs_fastest_pct", "optimal_pooled_within_2pct",
         "optimal_plan_same_as", "fastest_backward", "optimal_backward_ms",
         "optimal_backward_vs_fastest_pct"]
summary = []
for group in rows:
    by = {g["algo"]: g for g in group}
    if "optimal" not in by:
        continue
    opt = by["optimal"]
    fast = min(group, key=lambda g: g["iter_ms"])
    fast_bw = min(group, key=lambda g: g["backward_ms"])
    cands = [by[x] for x in ("wfbp", "all") if x in by]
    best = min(cands, key=lambda g: g["iter_ms"]) if cands else None
    same_as_wfbp = "wfbp" in by and opt["groups"] == by["wfbp"]["groups"]
    # the algorithms whose plan is optimal's very plan (same groups of the same parameters):
    # their runs measured one configuration, and their repeats are pooled with optimal's
    if opt["plan"] is not None:
        same = [g["algo"] for g in group
                if g["algo"] != "optimal" and g["plan"] is not None and g["plan"] == opt["plan"]]
    else:  # no ordo-plan: only wfbp's plan (one group per layer) is known from the counts
        same = ["wfbp"] if same_as_wfbp else []
    pooled = statistics.mean(opt["samples"] + [x for y in same for x in by[y]["samples"]])
    others = [g["iter_ms"] for g in group if g["algo"] != "optimal" and g["algo"] not in same]
    pooled_fastest = min([pooled] + others)
    summary.append({
        "model": opt["model"], "network": opt["network"], "servers": opt["servers"],
        "fastest": fast["algo"], "optimal_ms": opt["iter_ms"], "optimal_se_ms": opt["iter_ms_se"],
        "fastest_ms": fast["iter_ms"], "fastest_se_ms": fast["iter_ms_se"],
        "optimal_vs_fastest_pct": 100 * (opt["vs_fastest"] - 1),
        "best_of_wfbp_all": best["algo"] if best else "",
        "best_of_wfbp_all_ms": best["iter_ms"] if best else float("nan"),
        "optimal_gain_pct": 100 * (1 - opt["iter_ms"] / best["iter_ms"]) if best else float("nan"),
        "optimal_nonoverlap_ms": opt["nonoverlap_ms"],
        "best_of_wfbp_all_nonoverlap_ms": best["nonoverlap_ms"] if best else float("nan"),
        "startup_share": opt["startup_share"],
        "optimal_within_2pct": "yes" if opt["vs_fastest"] <= 1.02 else "no",
        "optimal_best_vs_fastest_pct": 100 * (opt["best_vs_fastest"] - 1),
        "optimal_best_gain_pct": 100 * (1 - opt["best_ms"] / best["best_ms"]) if best else float("nan"),
        # one group per layer is wfbp's plan exactly: the two rows then differ only by noise
        "optimal_plan_is_wfbp": "yes" if same_as_wfbp else "no",
        # pooled: where optimal's plan is another algorithm's (same_as), both sets of repeats
        # measured one configuration; their pooled median stands for them, against the
        # algorithms whose plans differ
        "optimal_pooled_ms": pooled,
        "optimal_plan_same_as": "+".join(same) if same else "none",
        "optimal_pooled_vs_fastest_pct": 100 * (pooled / pooled_fastest - 1),
        "optimal_pooled_within_2pct": "yes" if pooled <= 1.02 * pooled_fastest else "no",
        # the phase the plan decides: backward compute, the grouped pushes, their acks
        "fastest_backward": fast_bw["algo"], "optimal_backward_ms": opt["backward_ms"],
        "optimal_backward_vs_fastest_pct": 100 * (opt["backward_ms"] / fast_bw["backward_ms"] - 1)})
with open(os.path.join(a.out, "merging-summary.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(scols)
    for s in summary:
        w.writerow([fmt(s[c]) for c in scols])
for s in summary:
    print("%-13s %-7s S=%s fastest %-12s optimal %8.1f ms (%+5.1f%% vs fastest), %s %8.1f ms, "
          "optimal gain %+5.1f%%, startup share %.2f, backward %+5.1f%% vs fastest (%s)" % (
              s["model"], s["network"], s["servers"], s["fastest"], s["optimal_ms"],
              s["optimal_vs_fastest_pct"], s["best_of_wfbp_all"], s["best_of_wfbp_all_ms"],
              s["optimal_gain_pct"], s["startup_share"], s["optimal_backward_vs_fastest_pct"],
              s["fastest_backward"]))

# ---- plots -------------------------------------------------------------------------------
scripts = []
for net in networks:
    for what, col, ylabel, norm in (("iter", "iter_ms", "iteration time relative to wfbp", True),
                                    ("nonoverlap", "nonoverlap_ms",
                                     "non-overlapped communication (ms)", False)):
        dat = os.path.join(a.out, "merging-%s-%s.dat" % (what, net))
        with open(dat, "w") as f:
            f.write("# row " + " ".join(algos) + "\n")
            for group in rows:
                if group[0]["network"] != net:
                    continue
                by = {g["algo"]: g for g in group}
                base = by["wfbp"][col] if norm and "wfbp" in by else 1.0
                vals = [("%.4f" % (by[x][col] / base)) if x in by else "NaN" for x in algos]
                f.write("%s/S%s %s\n" % (group[0]["model"], group[0]["servers"], " ".join(vals)))
        plot = ", ".join("'%s' using %d:xtic(1) title '%s'" % (dat, i + 2, x)
                         for i, x in enumerate(algos))
        scripts.append("""reset
set terminal pngcairo size 1000,440 noenhanced
set output '%s'
set title 'Merged pushes, %d workers, emulated %s: %s'
set ylabel '%s'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key outside right top
set grid ytics
set yrange [0:*]
set xtics rotate by -20
plot %s
""" % (os.path.join(a.out, "merging-%s-%s.png" % (what, net)), a.workers,
       net + (" (time-dilated x%d)" % dilation[net] if dilation.get(net, 1) > 1 else ""),
       ylabel, ylabel, plot))
gp = os.path.join(a.out, "plots.gp")
with open(gp, "w") as f:
    f.write("\n".join(scripts))
try:
    subprocess.run(["gnuplot", gp], check=True)
    print("merging_report: merging.csv, merging-summary.csv and plots in %s" % a.out)
except (OSError, subprocess.CalledProcessError) as e:
    print("merging_report: gnuplot failed (%s); the CSV files are written" % e, file=sys.stderr)
    sys.exit(1)
