"""runstats.py: one run of the merging experiments as merging_report.py and merging_aa.sh
read it (scripts/experiments/merging.sh, merging_aa.sh)."""
import json
import os
import re
import statistics


def one_run(path, dilation=1):
    """(iter_ms, nonoverlap_ms, groups, messages, predicted_ms, best_ms, iterations, forward_ms,
    backward_ms) of one run, or None; best_ms is its fastest iteration (mean over workers), the
    least disturbed by other load, iterations the time of each measured iteration (mean over
    workers), forward_ms and backward_ms the medians of the two phases (NaN where the metrics
    have no forward_ms); with a time dilation K (merging.sh --dilate) every time is divided by
    K, the emulated network's time"""
    metrics = os.path.join(path, "metrics.jsonl")
    if not os.path.exists(metrics) or not os.path.exists(os.path.join(path, "summary.json")):
        return None  # not (yet) a complete run
    summary = json.load(open(os.path.join(path, "summary.json")))
    warm = summary.get("warmup", 1)
    steps, nono, per_iter, fwd_iter = [], [], {}, {}
    for line in open(metrics):
        o = json.loads(line)
        if o["iter"] < warm:
            continue
        steps.append(o["step_ms"])
        nono.append(o["step_ms"] - o["compute_ms"])
        per_iter.setdefault(o["iter"], []).append(o["step_ms"])
        fw = o.get("forward_ms")
        fwd_iter.setdefault(o["iter"], []).append(float("nan") if fw is None else fw)
    if not steps:
        return None
    groups = messages = predicted = float("nan")
    log = path + ".log"
    if os.path.exists(log):
        text = open(log).read()
        g = re.search(r"merge: \S+, (\d+) groups .*predicted backward \+ pushes(?: \+ pulls)? "
                      r"([0-9.]+) ms", text)
        if g:
            groups, predicted = int(g.group(1)), float(g.group(2))
        g = re.search(r"merged pushes: \d+ keys in \d+ groups, (\d+) messages", text)
        if g:
            messages = int(g.group(1))
    k = float(dilation)
    nono, predicted = [x / k for x in nono], predicted / k
    per_iter = {i: [x / k for x in v] for i, v in per_iter.items()}
    fwd_iter = {i: [x / k for x in v] for i, v in fwd_iter.items()}
    its = [statistics.mean(v) for v in per_iter.values()]
    fws = [statistics.mean(fwd_iter[i]) for i in per_iter]
    bws = [t - f for t, f in zip(its, fws)]
    fw_ms = statistics.median(fws) if all(x == x for x in fws) else float("nan")
    bw_ms = statistics.median(bws) if all(x == x for x in bws) else float("nan")
    return (statistics.median(its), statistics.mean(nono), groups, messages, predicted, min(its),
            its, fw_ms, bw_ms)
