#!/usr/bin/env python3
"""link_timeline.py: how busy the hosts' links of a torch.sh ddp run are over time.

  link_timeline.py sample OUT SECONDS   (run inside the bridge namespace of torch.sh, e.g.
                                         ip netns exec otxPID-sw link_timeline.py sample ...)
      every 10 ms, the byte counters of every bridge port (otxPIDbHOST: a host's link seen
      from the bridge: rx = the host's egress, tx = its ingress) as JSON lines in OUT
  link_timeline.py report OUT [--link MBIT]
      per host over the run's traffic (first to last window a worker host sent): the mean
      egress and ingress in Mbit/s, and the shares of 100 ms windows in which its egress was
      idle (below 5 % of --link), at 90 % of the link or more, and both directions idle.
"""
import json
import os
import statistics
import sys
import time


def sample(out_path: str, seconds: float) -> None:
    end = time.time() + seconds
    with open(out_path, "w") as out:
        while time.time() < end:
            row = {"t": time.monotonic()}
            for d in os.listdir("/sys/class/net"):
                if not d.startswith("otx") or "b" not in d[3:]:
                    continue
                for k in ("rx_bytes", "tx_bytes"):
                    with open(f"/sys/class/net/{d}/statistics/{k}") as f:
                        row[f"{d}:{k}"] = int(f.read())
            out.write(json.dumps(row) + "\n")
            time.sleep(0.01)


def report(path: str, link_mbit: float) -> None:
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    # the samples taken while every port existed (the sampler may start before the hosts
    # are made and outlive them)
    width = max(len(r) for r in rows)
    rows = [r for r in rows if len(r) == width]
    sel = [rows[0]]
    for r in rows[1:]:
        if r["t"] - sel[-1]["t"] >= 0.1:
            sel.append(r)
    ports = sorted({k.split(":")[0] for k in rows[0] if k != "t"})
    hosts = {p: p[p.index("b", 3) + 1:] for p in ports}
    rate = {p: [] for p in ports}  # (egress, ingress) Mbit/s per window
    for a, b in zip(sel, sel[1:], strict=False):
        dt = b["t"] - a["t"]
        for p in ports:
            eg = (b[f"{p}:rx_bytes"] - a[f"{p}:rx_bytes"]) * 8 / dt / 1e6
            ing = (b[f"{p}:tx_bytes"] - a[f"{p}:tx_bytes"]) * 8 / dt / 1e6
            rate[p].append((eg, ing))
    floor = 0.05 * link_mbit
    workers = [p for p in ports if hosts[p].startswith("h")]
    # the run: from the first to the last window any worker host's egress was busy
    active = [i for i in range(len(sel) - 1) if any(rate[p][i][0] > floor for p in workers)]
    if not active:
        print("no traffic")
        return
    lo, hi = active[0], active[-1]
    print(f"{(hi - lo + 1) / 10:.1f} s of traffic, link {link_mbit:g} Mbit/s each way, "
          "100 ms windows")
    print("| host | egress mean (Mbit/s) | ingress mean | egress idle | egress at >= 90 % "
          "| both directions idle |")
    print("|---|---:|---:|---:|---:|---:|")
    for p in ports:
        r = rate[p][lo:hi + 1]
        n = len(r)
        eg = statistics.mean(x[0] for x in r)
        ing = statistics.mean(x[1] for x in r)
        eidle = sum(x[0] <= floor for x in r) / n
        esat = sum(x[0] >= 0.9 * link_mbit for x in r) / n
        both = sum(x[0] <= floor and x[1] <= floor for x in r) / n
        print(f"| {hosts[p]} | {eg:.0f} | {ing:.0f} | {eidle:.2f} | {esat:.2f} | {both:.2f} |")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "sample":
        sample(sys.argv[2], float(sys.argv[3]))
    elif len(sys.argv) >= 3 and sys.argv[1] == "report":
        link = float(sys.argv[sys.argv.index("--link") + 1]) if "--link" in sys.argv else 1000.0
        report(sys.argv[2], link)
    else:
        sys.exit(__doc__)
