#!/usr/bin/env python3
"""cluster_scale: `ordo-plan cluster` at the sizes people run (docs/results/cluster-scale.md).

    scripts/experiments/cluster_scale.py [--bin build/bin] [--markdown]

For resnet50, vgg16 and bert_large (conf/models/), 64, 256 and 1,024 workers at 8 per host
and worker-host links of 10, 25 and 100 Gbit/s (server hosts the same), prints ordo's
recommended settings (everything auto), its predicted step and limit, and the ring and
hierarchical all-reduce models' steps. Then the settings of BytePS's published comparisons
(docs/performance.md of bytedance/byteps): ResNet-50 and VGG-16 at batch 64 per GPU (the
profiles' batch-32 times x 2) on 20 Gbit/s TCP, and at 100 Gbit/s; BERT-large in mixed
precision (bf16 on the wire) at 100 Gbit/s on 256 GPUs; each with ordo's predicted speed-up
over the ring, the model of Horovod+NCCL.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def plan(binary: str, model: str, workers: int, link: str, extra: list[str]) -> dict:
    """One `ordo-plan cluster --json` answer."""
    # GPU hosts: a host group's reduce and gather run over NVLink (~80 GB/s: 0.05 ns a value)
    cmd = [binary, "cluster", "--json", "--workers", str(workers), "--workers-per-host", "8",
           "--intra-ns", "0.05",
           "--worker-link", link] + extra + [os.path.join(ROOT, "conf", "models", model + ".json")]
    return json.loads(subprocess.check_output(cmd, text=True))


def settings(d: dict) -> str:
    s = d["settings"]
    return f"S={s['server_hosts']} {s['compression']} groups {s['groups']} {s['order']}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="ordo-plan cluster at scale")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    a = ap.parse_args(argv)
    binary = os.path.join(a.bin, "ordo-plan")
    print("| model | workers | link | recommended | ordo step ms | limit | ring ms | hier ms | "
          "ordo vs ring | ordo vs hier |")
    print("|---|---:|---|---|---:|---|---:|---:|---:|---:|")
    for model in ("resnet50", "vgg16", "bert_large"):
        for workers in (64, 256, 1024):
            for link in ("10gbit", "25gbit", "100gbit"):
                d = plan(binary, model, workers, link, [])
                ps, ring = d["ps"]["step_ms"], d["ring"]["step_ms"]
                hier = d["hierarchical"]["step_ms"]
                print(f"| {model} | {workers} | {link} | {settings(d)} | {ps:.0f} | "
                      f"{d['ps']['limit']} | {ring:.0f} | {hier:.0f} | {ring / ps:.2f}x | "
                      f"{hier / ps:.2f}x |")
    print()
    print("| BytePS setting | published BytePS / Horovod | ordo's settings | ordo ms | ring ms | "
          "predicted ordo / ring |")
    print("|---|---:|---|---:|---:|---:|")
    cases = [("resnet50", 64, "20gbit", ["--compute-scale", "2", "--compression", "none"],
              "ResNet-50, 20 Gbit/s TCP, 8 V100 (NVLink) a host, batch 64", "1.44"),
             ("vgg16", 64, "20gbit", ["--compute-scale", "2", "--compression", "none"],
              "VGG-16, 20 Gbit/s TCP, 8 V100 (NVLink) a host, batch 64", "2.00"),
             ("resnet50", 64, "100gbit", ["--compute-scale", "2", "--compression", "none"],
              "ResNet-50, 100 Gbit/s RDMA, PCIe only, batch 64", "1.07"),
             ("vgg16", 64, "100gbit", ["--compute-scale", "2", "--compression", "none"],
              "VGG-16, 100 Gbit/s RDMA, PCIe only, batch 64", "1.17"),
             ("bert_large", 256, "100gbit", ["--compute-scale", "2", "--compression", "bf16"],
              "BERT-large, 100 Gbit/s RDMA, NVLink, 256 GPUs, mixed precision, batch 64", "1.16")]
    for model, workers, link, extra, what, published in cases:
        d = plan(binary, model, workers, link, extra)
        ps, ring = d["ps"]["step_ms"], d["ring"]["step_ms"]
        print(f"| {what} ({workers} GPUs) | {published} | {settings(d)} | {ps:.0f} | "
              f"{ring:.0f} | {ring / ps:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
