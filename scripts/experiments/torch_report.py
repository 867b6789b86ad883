#!/usr/bin/env python3
"""torch_report.py: the CSVs, plots and tables of scripts/experiments/torch.sh.

Reads OUT/runs/RUN/workerN.jsonl of every run (records marked warmup are left out) and, for the
ordering runs, OUT/runs/RUN/profile.json (rank 0's measured profile) and OUT/batches.txt.
torch-ordering.csv, one row per model and policy: batch (per worker), throughput (samples/s,
all workers: their samples over the span from the first measured start to the last end),
speedup_vs_none (throughput over the same model's policy none), straggler_effect (per
iteration the longest wait of a worker for the last one to finish, over the iteration's span,
averaged; the C runs' summary.json measure), step_ms_mean, p50, p95 (the forward pass: barrier
to the forward's end), predicted_ms (`ordo-plan simulate` of the measured profile at one
worker's fair share of the link; policy none: the mean over 5 random orders), measured_over_
predicted, fwd_profile_ms (the profile's forward compute) and pull_ms (the model's bytes at the
share). torch-ddp.csv, one row per model and system: batch, throughput (samples/s),
steps_per_s, step_ms_mean, p50, the means of forward_ms, backward_ms and step_wait_ms (the
wait in opt.step() for the transfers), host_tx_models and host_rx_models (a worker host's
interface bytes per iteration over the model's bytes, the mean of the 2 hosts), ordo_push_models
and ordo_pull_models (the payload ordo's path counted, per host; host groups only) and vs_ddp
(throughput over the best float32 DDP variant's: ddp and ddp-bMB, the bucket sizes that ran)
and vs_ddp_hook (over the best DDP variant with a compression hook: -bf16, -fp16, -powersgd). Plots (gnuplot, when
installed): torch-throughput.png, torch-speedup.png, torch-straggler.png,
torch-predicted.png, torch-ddp.png.
torch-tables.md: both tables in Markdown.
"""
import argparse
import csv
import glob
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile

from plots import clustered_bars  # this folder, on sys.path as the script's own

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--bin", required=True)
ap.add_argument("--models", required=True)
ap.add_argument("--policies", required=True)
ap.add_argument("--bandwidth", default="2gbit")
ap.add_argument("--workers", type=int, default=4)
ap.add_argument("--ddp-workers", type=int, default=4, help="the ddp part's workers")
ap.add_argument("--latency-us", default="100")
a = ap.parse_args()
models = a.models.replace(",", " ").split()
policies = a.policies.replace(",", " ").split()
DDP_SYSTEMS = ["ordo-gradients-none", "ordo-gradients-tao", "ordo-gradients-tao-greedy",
               "ordo-server-none", "ordo-server-tao", "ordo-server-tao-greedy", "ddp"]


def ddp_systems(m):
    """the ddp part's systems of model m that ran: the usual ones first, then the rest"""
    ran = [os.path.basename(d)[len("ddp-%s-" % m):]
           for d in sorted(glob.glob(os.path.join(a.out, "runs", "ddp-%s-*" % m)))]
    return [x for x in DDP_SYSTEMS if x in ran] + [x for x in ran if x not in DDP_SYSTEMS]


def host_bytes(run):
    """per worker host (netRANK.json's host), per measured iteration, in models: the bytes
    its interface sent and received (the mean over the hosts), and ordo's own count of the
    payload its workers pushed and pulled ("" where the path gives none)"""
    nets = {}
    for path in glob.glob(os.path.join(a.out, "runs", run, "net*.json")):
        d = json.load(open(path))
        nets[d["worker"]] = d
    hosts = sorted({d.get("host", w // 2) for w, d in nets.items()})
    if not hosts:
        return {}
    out = {"host_tx_models": [], "host_rx_models": [], "ordo_push_models": [],
           "ordo_pull_models": []}
    for h in hosts:
        ws = [d for w, d in sorted(nets.items()) if d.get("host", w // 2) == h]
        first = ws[0]
        per = first["iterations"] * first["model_bytes"]
        out["host_tx_models"].append(first["tx_bytes"] / per)
        out["host_rx_models"].append(first["rx_bytes"] / per)
        if all("ordo_pushed_bytes" in w for w in ws):
            out["ordo_push_models"].append(sum(w["ordo_pushed_bytes"] for w in ws) / per)
            out["ordo_pull_models"].append(sum(w["ordo_pulled_bytes"] for w in ws) / per)
    return {k: r4(statistics.mean(v)) if v else "" for k, v in out.items()}


def rate_bps(s):
    num, unit = re.fullmatch(r"([0-9.]+)([a-z]*)", s).groups()
    return float(num) * {"": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}[unit]


def records(run):
    recs = []
    for path in sorted(glob.glob(os.path.join(a.out, "runs", run, "worker*.jsonl"))):
        recs += [json.loads(line) for line in open(path) if line.strip()]
    return [r for r in recs if not r.get("warmup")]


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def summary(recs, workers=None):
    """throughput, straggler effect and step-time distribution of a run's records"""
    workers = workers or a.workers
    t0 = min(r["t_start_ns"] for r in recs)
    t1 = max(r["t_end_ns"] for r in recs)
    samples = sum(r["samples"] for r in recs)
    strag = []
    for it in sorted({r["iter"] for r in recs}):
        its = [r for r in recs if r["iter"] == it]
        if len(its) != workers:
            continue
        last = max(r["t_end_ns"] for r in its)
        span = last - min(r["t_start_ns"] for r in its)
        if span > 0:
            strag.append(max(last - r["t_end_ns"] for r in its) / span)
    steps = [r["step_ms"] for r in recs]
    return {"throughput": samples / ((t1 - t0) / 1e9),
            "straggler_effect": statistics.mean(strag) if strag else float("nan"),
            "step_ms_mean": statistics.mean(steps), "p50": pct(steps, 0.5),
            "p95": pct(steps, 0.95), "iterations": len({r["iter"] for r in recs})}


def simulate(profile, policy, share):
    """makespan (ms) of the profile's forward pass under policy at the link share"""
    base = [os.path.join(a.bin, "ordo-plan"), "simulate", "--bandwidth", share,
            "--latency-us", a.latency_us]
    if policy != "none":
        cmd = base + ["--policy", policy, "--budget-ms", "1000", profile]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        return json.loads(out)["makespan_us"] / 1e3
    prof = json.load(open(profile))
    names = [p["name"] for p in prof["params"]]
    spans = []
    for seed in range(5):
        order = list(names)
        random.Random(seed).shuffle(order)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"format": "ordo-order/1", "model": prof["name"], "policy": "random",
                       "priorities": [{"param": n, "priority": i}
                                      for i, n in enumerate(order)]}, f)
        try:
            out = subprocess.run(base + ["--order", f.name, profile], check=True,
                                 capture_output=True, text=True).stdout
        finally:
            os.unlink(f.name)
        spans.append(json.loads(out)["makespan_us"] / 1e3)
    return statistics.mean(spans)


def r4(x):
    return round(x, 4) if isinstance(x, float) and math.isfinite(x) else x


share_bps = rate_bps(a.bandwidth) / a.workers
share = "%dkbit" % round(share_bps / 1e3)
batches = {}
if os.path.exists(os.path.join(a.out, "batches.txt")):
    for line in open(os.path.join(a.out, "batches.txt")):
        m, b, cal = line.split(" ", 2)
        batches[m] = (int(b), json.loads(cal))

ordering = []
for m in models:
    base_tput = None
    for pol in policies:
        run = "ordering-%s-%s" % (m, pol)
        recs = records(run)
        if not recs:
            continue
        s = summary(recs)
        profile = os.path.join(a.out, "runs", run, "profile.json")
        pred = simulate(profile, pol, share) if os.path.exists(profile) else float("nan")
        prof = json.load(open(profile)) if os.path.exists(profile) else {"ops": [], "params": []}
        nbytes = 4 * sum(math.prod(p["shape"]) for p in prof["params"])
        if pol == "none":
            base_tput = s["throughput"]
        ordering.append({
            "model": m, "policy": pol, "batch": batches.get(m, ("", None))[0],
            "throughput": r4(s["throughput"]),
            "speedup_vs_none": r4(s["throughput"] / base_tput) if base_tput else "",
            "straggler_effect": r4(s["straggler_effect"]),
            "step_ms_mean": r4(s["step_ms_mean"]), "p50": r4(s["p50"]), "p95": r4(s["p95"]),
            "predicted_ms": r4(pred), "measured_over_predicted": r4(s["step_ms_mean"] / pred),
            "fwd_profile_ms": r4(sum(o["fwd_us"] for o in prof["ops"]) / 1e3),
            "pull_ms": r4(nbytes * 8 / share_bps * 1e3), "iterations": s["iterations"]})

ddp = []
for m in models:
    base = best_hook = None
    rows = []
    for sysname in ddp_systems(m):
        recs = records("ddp-%s-%s" % (m, sysname))
        if not recs:
            continue
        s = summary(recs, a.ddp_workers)
        batch = recs[0]["samples"]
        def mean_of(key, recs=recs):
            xs = [r[key] for r in recs if key in r]
            return r4(statistics.mean(xs)) if xs else ""
        rows.append({"model": m, "system": sysname, "batch": batch,
                     "throughput": r4(s["throughput"]),
                     "steps_per_s": r4(s["throughput"] / (batch * a.ddp_workers)),
                     "step_ms_mean": r4(s["step_ms_mean"]), "p50": r4(s["p50"]),
                     "forward_ms": mean_of("forward_ms"), "backward_ms": mean_of("backward_ms"),
                     "step_wait_ms": mean_of("step_wait_ms"), "iterations": s["iterations"],
                     **host_bytes("ddp-%s-%s" % (m, sysname))})
        if sysname.split("-")[0] == "ddp":
            hooked = sysname.rsplit("-", 1)[-1] in ("bf16", "fp16", "powersgd")
            if hooked:  # DDP's best with a compression hook
                best_hook = max(best_hook or 0, s["throughput"])
            else:  # DDP's best bucket size, float32
                base = max(base or 0, s["throughput"])
    for r in rows:
        r["vs_ddp"] = r4(r["throughput"] / base) if base else ""
        r["vs_ddp_hook"] = r4(r["throughput"] / best_hook) if best_hook else ""
    ddp += rows


def write_csv(name, rows):
    path = os.path.join(a.out, name)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()) if rows else ["model"])
        w.writeheader()
        w.writerows(rows)
    print("torch_report: %d rows in %s" % (len(rows), path))


write_csv("torch-ordering.csv", ordering)
write_csv("torch-ddp.csv", ddp)


def md_table(rows):
    if not rows:
        return "(no runs)\n"
    keys = list(rows[0].keys())
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(lines) + "\n"


with open(os.path.join(a.out, "torch-tables.md"), "w") as f:
    f.write("Ordering (forward pass):\n\n" + md_table(ordering) + "\nAgainst DDP:\n\n" +
            md_table(ddp))


# ---- plots (gnuplot) ---------------------------------------------------------------------
def bars(name, rows, group, series, key, ylabel, title):
    dat = os.path.join(a.out, name + ".dat")
    groups = list(dict.fromkeys(r[group] for r in rows))
    names = list(dict.fromkeys(r[series] for r in rows))
    with open(dat, "w") as f:
        f.write("# %s %s\n" % (group, " ".join(names)))
        for g in groups:
            vals = []
            for n in names:
                v = [r[key] for r in rows if r[group] == g and r[series] == n]
                vals.append(str(v[0]) if v and v[0] != "" else "NaN")
            f.write(g + " " + " ".join(vals) + "\n")
    return clustered_bars(os.path.join(a.out, name + ".png"), title, ylabel, dat, names)


scripts = []
if ordering:
    scripts.append(bars("torch-throughput", ordering, "model", "policy", "throughput",
                        "samples/s (4 workers)", "Forward-pass throughput, 1 server, 4 workers, "
                        "%s emulated" % a.bandwidth))
    scripts.append(bars("torch-speedup", ordering, "model", "policy", "speedup_vs_none",
                        "throughput / policy none", "Forward-pass throughput over that of policy none"))
    scripts.append(bars("torch-straggler", ordering, "model", "policy", "straggler_effect",
                        "straggler effect", "Straggler effect of the forward pass"))
    scripts.append(bars("torch-predicted", ordering, "model", "policy",
                        "measured_over_predicted", "measured / simulated step",
                        "Measured forward step over ordo-plan simulate of the measured "
                        "profile"))
if ddp:
    scripts.append(bars("torch-ddp", ddp, "model", "system", "throughput",
                        "samples/s (%d workers)" % a.ddp_workers,
                        "ordo.torch against DDP (gloo), %d workers on shaped links"
                        % a.ddp_workers))
if scripts:
    gp = os.path.join(a.out, "plots.gp")
    with open(gp, "w") as f:
        f.write("\n".join(scripts))
    try:
        subprocess.run(["gnuplot", gp], check=True)
        print("torch_report: plots in %s" % a.out)
    except (OSError, subprocess.CalledProcessError) as e:
        print("torch_report: gnuplot failed (%s); the CSVs are written" % e, file=sys.stderr)
