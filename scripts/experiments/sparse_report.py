#!/usr/bin/env python3
"""sparse_report.py: sparse.csv, curves.csv and the PNG plots of scripts/experiments/sparse.sh.

For every run OUT/runs/MODEL-dense or MODEL-dDENSITY it reads summary.json and metrics.jsonl.
sparse.csv, one row per run: model, density (1 for dense pushes), mode, iterations, wall_s
(training time: the sum over iterations of the slowest worker's step time), step_ms_mean,
throughput
(samples/s over all workers after warm-up), test_accuracy, final_loss, bytes_per_iter (payload
bytes pushed + pulled per worker and iteration, mean), bytes_per_iter_max, bytes_vs_dense
(bytes_per_iter over the same model's dense run), and for sparse runs k, bytes_bound
(2 x 8 x k x 1.25), bytes_over_bound_max, local_mean and global_mean (entries selected per
worker-iteration), load_imbalance_first (max / mean load per server before the first
re-balancing) and load_imbalance_after (the worst region epoch after it).
curves.csv: model, density, iteration, time_s, train_accuracy (all workers' batches of the 25
iterations up to this one), loss (the same window's mean).
Plots (gnuplot): accuracy-MODEL.png (train accuracy against time, one line per density, the
final test accuracy in the legend) and bytes.png (bytes per worker and iteration, log scale).
"""
import argparse
import csv
import json
import os
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--models", required=True)
ap.add_argument("--densities", required=True)
a = ap.parse_args()
models, densities = a.models.split(), a.densities.split()
WINDOW = 25


def run_name(model, d):
    return "%s-dense" % model if d == "dense" else "%s-d%s" % (model, d)


def label(d):
    return "dense" if d == "dense" else "%g%%" % (100 * float(d))


def num(v, fmt="%.6g"):
    return "" if v is None else fmt % v


rows, curves, runs = [], [], {}
for m in models:
    for d in densities:
        folder = os.path.join(a.out, "runs", run_name(m, d))
        try:
            s = json.load(open(os.path.join(folder, "summary.json")))
            lines = [json.loads(l) for l in open(os.path.join(folder, "metrics.jsonl"))]
        except (OSError, ValueError) as e:
            print("sparse_report: skipping %s: %s" % (folder, e), file=sys.stderr)
            continue
        by_iter = {}
        for l in lines:
            by_iter.setdefault(l["iter"], []).append(l)
        # time: iterations are in lock step, so the run's clock advances by the slowest
        # worker's step time per iteration
        its = sorted(by_iter)
        clock, ends = 0.0, {}
        for it in its:
            clock += max(l["step_ms"] for l in by_iter[it]) / 1e3
            ends[it] = clock
        sp = s.get("sparse", {})
        bytes_ = [l["bytes_push"] + l["bytes_pull"] for l in lines]
        row = {
            "model": m, "density": 1.0 if d == "dense" else float(d),
            "mode": "dense" if d == "dense" else "sparse",
            "iterations": s.get("iterations"), "wall_s": clock,
            "step_ms_mean": s["step_ms"]["mean"],
            "throughput": s.get("throughput_samples_per_s"),
            "test_accuracy": s.get("test_accuracy"), "final_loss": s.get("final_loss"),
            "bytes_per_iter": sum(bytes_) / len(bytes_), "bytes_per_iter_max": max(bytes_),
            "k": sp.get("k"), "bytes_bound": sp.get("bytes_bound"),
            "bytes_over_bound_max": sp.get("bytes_over_bound_max"),
            "local_mean": sp.get("local_mean"), "global_mean": sp.get("global_mean"),
            "load_imbalance_first": (sp.get("imbalance_by_epoch") or [None])[0],
            "load_imbalance_after": sp.get("imbalance_after_rebalance_max"),
        }
        rows.append(row)
        runs[(m, d)] = row
        # train accuracy over a window of iterations, against the time the iteration ended
        for i, it in enumerate(its):
            if i % 5 and i != len(its) - 1:
                continue
            win = [l for j in its[max(0, i - WINDOW + 1):i + 1] for l in by_iter[j]]
            samples = len(win) * s["conf"]["model"]["batch"]  # metrics lines omit it
            correct = sum(l.get("correct", 0) for l in win)
            loss = sum(l.get("loss", 0) for l in win) / len(win)
            curves.append({"model": m, "density": row["density"], "iteration": it,
                           "time_s": ends[it],
                           "train_accuracy": correct / samples if samples else None,
                           "loss": loss})
for r in rows:
    dense = runs.get((r["model"], "dense"))
    r["bytes_vs_dense"] = r["bytes_per_iter"] / dense["bytes_per_iter"] if dense else None

cols = ["model", "density", "mode", "iterations", "wall_s", "step_ms_mean", "throughput",
        "test_accuracy", "final_loss", "bytes_per_iter", "bytes_per_iter_max", "bytes_vs_dense",
        "k", "bytes_bound", "bytes_over_bound_max", "local_mean", "global_mean",
        "load_imbalance_first", "load_imbalance_after"]
with open(os.path.join(a.out, "sparse.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(cols)
    for r in rows:
        w.writerow([r[c] if isinstance(r[c], str) else num(r[c]) for c in cols])
with open(os.path.join(a.out, "curves.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["model", "density", "iteration", "time_s", "train_accuracy", "loss"])
    for c in curves:
        w.writerow([c["model"], num(c["density"]), c["iteration"], num(c["time_s"]),
                    num(c["train_accuracy"]), num(c["loss"])])
print("sparse_report: %d runs in %s" % (len(rows), os.path.join(a.out, "sparse.csv")))
for r in rows:
    print("  %-4s %-6s  test acc %s  %7.1f s  %9.0f B/iter per worker (%s of dense)%s" % (
        r["model"], label("dense" if r["mode"] == "dense" else r["density"]),
        num(r["test_accuracy"], "%.4f"), r["wall_s"], r["bytes_per_iter"],
        num(r["bytes_vs_dense"], "%.4f"),
        "" if r["mode"] == "dense" else "  max %.2f of the bound, load %.2f / %.2f x mean" % (
            r["bytes_over_bound_max"], r["load_imbalance_first"], r["load_imbalance_after"])))

# ---- plots -------------------------------------------------------------------------------
gp = os.path.join(a.out, "plots.gp")
with open(gp, "w") as g:
    g.write("set terminal pngcairo size 900,560 noenhanced\nset datafile separator ','\n"
            "set key bottom right\nset grid\n")
    for m in models:
        present = [d for d in densities if (m, d) in runs]
        if not present:
            continue
        # one data block per density
        data = os.path.join(a.out, "curve-%s.dat" % m)
        with open(data, "w") as f:
            for d in present:
                dv = 1.0 if d == "dense" else float(d)
                for c in curves:
                    if c["model"] == m and c["density"] == dv and c["train_accuracy"] is not None:
                        f.write("%g,%g\n" % (c["time_s"], c["train_accuracy"]))
                f.write("\n\n")
        g.write("set output '%s'\n" % os.path.join(a.out, "accuracy-%s.png" % m))
        g.write("set title '%s: train accuracy (last %d iterations, all workers) against time'\n"
                % (m, WINDOW))
        g.write("set xlabel 'time (s)'\nset ylabel 'train accuracy'\nset yrange [0.5:1]\n")
        plots = ["'%s' index %d using 1:2 with lines lw 2 title '%s (test %s)'" % (
            data, i, label(d), num(runs[(m, d)]["test_accuracy"], "%.4f"))
            for i, d in enumerate(present)]
        g.write("plot " + ", ".join(plots) + "\n")
    data = os.path.join(a.out, "bytes.dat")
    with open(data, "w") as f:
        f.write("density," + ",".join(models) + "\n")
        for d in densities:
            f.write(label(d) + "," + ",".join(
                "%g" % runs[(m, d)]["bytes_per_iter"] if (m, d) in runs else "NaN"
                for m in models) + "\n")
    g.write("set output '%s'\n" % os.path.join(a.out, "bytes.png"))
    g.write("set title 'payload bytes pushed + pulled per worker and iteration'\n")
    g.write("set xlabel 'density'\nset ylabel 'bytes (log scale)'\nset logscale y\n"
            "set yrange [*:*]\nset key top right\nset style data histogram\n"
            "set style histogram cluster gap 1\nset style fill solid 0.8 border -1\n")
    g.write("plot " + ", ".join("'%s' using %d:xtic(1) title columnhead" % (data, i + 2)
                                for i in range(len(models))) + "\n")
try:
    subprocess.run(["gnuplot", gp], check=True)
    print("sparse_report: plots in %s" % a.out)
except (OSError, subprocess.CalledProcessError) as e:
    print("sparse_report: gnuplot failed (%s); the CSVs are written" % e, file=sys.stderr)
    sys.exit(1)
