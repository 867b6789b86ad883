#!/usr/bin/env python3
"""gen_models: writes ordo's model profiles (ordo-model/1, docs/models.md).

    scripts/models/gen_models.py [--out conf/models] [--tflops 10] [--mem-gbps 700]
                                 [--overhead-us 5] [--batch 32] [--table] [MODEL ...]

Writes OUT/NAME.json for every model (or the named ones): alexnet, vgg16, googlenet,
inception_v2, resnet50, densenet121, par32, seq32, smallmany. With --table, also prints a
Markdown table of tensors, parameters, MiB, ops and forward/backward milliseconds. Output is
deterministic. Python standard library only; see docs/models.md.
"""

import argparse
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from archs import MODELS  # noqa: E402
from netgraph import Cost  # noqa: E402

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "conf",
                           "models")


def positive(kind):
    def parse(text):
        v = kind(text)
        if v <= 0:
            raise argparse.ArgumentTypeError("must be > 0")
        return v
    return parse


def main(argv=None):
    ap = argparse.ArgumentParser(description="Write ordo-model/1 profiles.")
    ap.add_argument("--out", default=DEFAULT_OUT, help="output folder (default conf/models)")
    ap.add_argument("--tflops", type=positive(float), default=10.0,
                    help="effective FLOP/s of the device, in TFLOP/s (default 10)")
    ap.add_argument("--mem-gbps", type=positive(float), default=700.0,
                    help="effective memory bandwidth, in GB/s (default 700)")
    ap.add_argument("--overhead-us", type=float, default=5.0,
                    help="fixed cost per op (kernel launch), in us (default 5)")
    ap.add_argument("--batch", type=positive(int), default=32,
                    help="samples per worker per iteration (default 32; par32/seq32 use 1)")
    ap.add_argument("--table", action="store_true", help="print a Markdown table of the models")
    ap.add_argument("--no-write", action="store_true", help="do not write files (with --table)")
    ap.add_argument("models", nargs="*", metavar="MODEL",
                    help="models to write (default all): " + ", ".join(MODELS))
    args = ap.parse_args(argv)
    if args.overhead_us < 0:
        ap.error("--overhead-us must be >= 0")
    names = args.models or list(MODELS)
    for n in names:
        if n not in MODELS:
            ap.error("unknown model '%s' (one of %s)" % (n, ", ".join(MODELS)))
    cost = Cost(args.tflops, args.mem_gbps, args.overhead_us)
    rows = []
    if not args.no_write:
        os.makedirs(args.out, exist_ok=True)
    for n in names:
        g = MODELS[n](cost, args.batch)
        if not args.no_write:
            path = os.path.join(args.out, n + ".json")
            with open(path, "w", encoding="utf-8") as f:
                f.write(g.to_json())
        rows.append((n, g.batch, g.totals()))
    if args.table:
        print("| model | batch | tensors | parameters | MiB | ops | forward ms | backward ms |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for n, batch, t in rows:
            print("| %s | %d | %d | %s | %.2f | %d | %.2f | %.2f |"
                  % (n, batch, t["tensors"], format(t["params"], ","), t["mib"], t["ops"],
                     t["fwd_ms"], t["bwd_ms"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
