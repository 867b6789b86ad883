#!/usr/bin/env python3
"""cluster_report: the table and error distribution of a cluster.sh run (docs/planning.md).

    scripts/experiments/cluster_report.py CLUSTER.csv [--max-error X] [--markdown]

Prints one row per grid point (predicted and measured step, error, the limit the planner
named, bytes a worker host and a server host sent per iteration against the prediction) and
the median, 90th percentile and worst of |error|. With --max-error X it exits 1 when a
point's |error| is above X (a fraction).
"""

import argparse
import csv
import sys


def percentile(xs: list[float], q: float) -> float:
    """The q-quantile of xs by linear interpolation between order statistics."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


WIDTHS = (-11, 2, 2, 2, -16, -3, -4, 3, 9, 9, 7, -11, 15, 15, 5, 5)


def row_text(cells: list[str]) -> str:
    """One row of the plain table: cells padded (negative width: left-aligned)."""
    out = []
    for c, w in zip(cells, WIDTHS, strict=True):
        out.append(c.ljust(-w) if w < 0 else c.rjust(w))
    return " ".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Summarise a cluster.sh run.")
    ap.add_argument("csv")
    ap.add_argument("--max-error", type=float, default=None)
    ap.add_argument("--markdown", action="store_true", help="a Markdown table")
    a = ap.parse_args(argv)
    with open(a.csv, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        print("cluster_report: no rows in " + a.csv, file=sys.stderr)
        return 1
    md = a.markdown
    head = ["model", "W", "L", "S", "links (w/s)", "groups", "order", "x", "predicted ms",
            "measured ms", "error", "limit", "h0 tx MB (pred)", "s0 tx MB (pred)", "load",
            "cores"]
    if md:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * 4 + "---|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|")
    else:
        print(row_text(head))
    errs = []
    for r in rows:
        e = float(r["error"])
        errs.append(abs(e))
        links = "{}/{}".format(r["worker_link"], r["server_link"])
        h = "{} ({})".format(r["worker_tx_mb"], r["predicted_worker_mb"])
        s = "{} ({})".format(r["server_tx_mb"], r["predicted_server_mb"])
        cells = [r["model"], r["workers"], r["per_host"], r["server_hosts"], links, r["groups"],
                 r["order"], r["compute_scale"], r["predicted_ms"], r["measured_ms"],
                 f"{100 * e:+.1f} %", r["limit"], h, s, r.get("load", ""), r.get("cores", "")]
        if md:
            print("| " + " | ".join(cells) + " |")
        else:
            print(row_text(cells))
    print()
    med, p90, worst = (100 * percentile(errs, 0.5), 100 * percentile(errs, 0.9),
                       100 * max(errs))
    print(f"{len(errs)} points: |error| median {med:.1f} %, 90th percentile {p90:.1f} %, "
          f"worst {worst:.1f} %")
    if a.max_error is not None and max(errs) > a.max_error:
        print("cluster_report: a point is off by more than %.0f %%" % (100 * a.max_error))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
