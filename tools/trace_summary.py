#!/usr/bin/env python3
"""Where a run's time goes, from train_mlp --trace FILE.

For each device queue: every kernel's count, total and per-batch time and
share of the window, grouped into GEMM ops (matmul, linear, linear_relu,
linear_grad_weight, linear_grad_input_relu: the GEMM with the bias, ReLU or
their gradients fused in), the rest, and idle (the window
minus the kernels). The window runs from the first kernel of the first batch
kept to the last kernel's end; --skip N drops the first N batches (warm-up).

On a GPU a queue's spans are the worker's launches; the GPU's own time is on
the device track ("device cuda:0": each op's start and end on the GPU, from
CUDA events). For it: the GPU's busy time (the union of its ops), its idle
gaps (how many, their total, the longest), each kernel's GPU time, its
median and the median idle gap just before it, and per batch the GPU's busy
time, its time outside the GEMM ops and its idle time between ops.

    build/bin/train_mlp --device cpu --batches 30 --trace t.json
    python3 tools/trace_summary.py t.json --skip 5
"""
import argparse
import collections
import json
import statistics
import sys

GEMM_OPS = {"matmul", "linear", "linear_relu", "linear_grad_weight", "linear_grad_input_relu"}


def fail(msg):
    print(f"trace_summary.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace", help="a train_mlp --trace file (Chrome trace-event JSON)")
    ap.add_argument("--skip", type=int, default=0, metavar="N", help="leave out the first N batches (warm-up)")
    a = ap.parse_args()
    try:
        with open(a.trace) as f:
            events = json.load(f)["traceEvents"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(f"cannot read trace {a.trace!r}: {e}")

    names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    spans = [e for e in events if e.get("ph") == "X"]
    batches = sorted((e["ts"], e["ts"] + e["dur"]) for e in spans if names.get(e["tid"], "").startswith("frontend")
                     and e["name"] == "batch")
    if a.skip < 0 or a.skip >= max(len(batches), 1):
        fail(f"--skip {a.skip}: the trace has {len(batches)} batches")
    start = batches[a.skip][0] if batches else 0
    kept = len(batches) - a.skip if batches else 1

    queues = sorted(tid for tid, n in names.items() if n.startswith("queue "))
    if not queues:
        fail("no queue track in the trace (was it written by train_mlp --trace?)")
    report_queues(queues, names, spans, start, kept)
    for tid in sorted(tid for tid, n in names.items() if n.startswith("device ")):
        report_device(names[tid], [e for e in spans if e["tid"] == tid and e["ts"] >= start], kept)


def report_device(name, ops, kept):
    """The GPU's own time: busy (the union of its ops' spans), the idle gaps, each kernel's time."""
    if not ops:
        return
    ops.sort(key=lambda e: e["ts"])
    busy, gaps = 0, []
    gap_before = collections.defaultdict(list)  # per kernel: the idle time just before each of its runs
    gap_before[ops[0]["name"]].append(0)
    cur0, cur1 = ops[0]["ts"], ops[0]["ts"] + ops[0]["dur"]
    for e in ops[1:]:
        b, end = e["ts"], e["ts"] + e["dur"]
        gap_before[e["name"]].append(max(0, b - cur1))
        if b > cur1:
            busy += cur1 - cur0
            gaps.append(b - cur1)
            cur0, cur1 = b, end
        else:
            cur1 = max(cur1, end)
    busy += cur1 - cur0
    window = max(max(e["ts"] + e["dur"] for e in ops) - ops[0]["ts"], 1)
    idle = sum(gaps)
    print(f"{name} (GPU time): {kept} batches, window {window / 1e3:.1f} ms, busy {busy / 1e3:.2f} ms "
          f"({100 * busy / window:.1f}%), idle {idle / 1e3:.2f} ms in {len(gaps)} gaps"
          + (f" (longest {max(gaps) / 1e3:.3f} ms, mean {idle / len(gaps):.1f} us)" if gaps else ""))
    per = collections.defaultdict(lambda: [0, 0])
    durs = collections.defaultdict(list)
    for e in ops:
        per[e["name"]][0] += 1
        per[e["name"]][1] += e["dur"]
        durs[e["name"]].append(e["dur"])
    print(f"  {'kernel':<24}{'count':>7}{'GPU ms':>11}{'ms/batch':>10}{'share':>8}{'median us':>11}{'gap before us':>15}")
    for n, (cnt, d) in sorted(per.items(), key=lambda kv: -kv[1][1]):
        print(f"  {n:<24}{cnt:>7}{d / 1e3:>11.3f}{d / 1e3 / kept:>10.3f}{100 * d / window:>7.1f}%"
              f"{statistics.median(durs[n]):>11.1f}{statistics.median(gap_before[n]):>15.1f}")
    outside = sum(d for n, (_, d) in per.items() if n not in GEMM_OPS)
    print(f"  per batch: GPU busy {busy / kept:.1f} us, outside the GEMM ops {outside / kept:.1f} us, "
          f"idle between ops {idle / kept:.1f} us (gap before: the median idle time just before the kernel)")


def report_queues(queues, names, spans, start, kept):
    for tid in queues:
        ks = [e for e in spans if e["tid"] == tid and e["ts"] >= start]
        if not ks:
            continue
        t0 = min(e["ts"] for e in ks)
        t1 = max(e["ts"] + e["dur"] for e in ks)
        window = max(t1 - t0, 1)
        per = collections.defaultdict(lambda: [0, 0])
        for e in ks:
            per[e["name"]][0] += 1
            per[e["name"]][1] += e["dur"]
        busy = sum(d for _, d in per.values())
        gemm = sum(d for n, (_, d) in per.items() if n in GEMM_OPS)
        print(f"{names[tid]}: {kept} batches, window {window / 1e3:.1f} ms "
              f"({window / 1e3 / kept:.2f} ms per batch)")
        print(f"  {'kernel':<24}{'count':>7}{'total ms':>11}{'ms/batch':>10}{'share':>8}")
        for n, (cnt, d) in sorted(per.items(), key=lambda kv: -kv[1][1]):
            print(f"  {n:<24}{cnt:>7}{d / 1e3:>11.2f}{d / 1e3 / kept:>10.3f}{100 * d / window:>7.1f}%")
        for label, d in (("GEMM ops", gemm), ("the rest", busy - gemm), ("idle", window - busy)):
            print(f"  {label:<31}{d / 1e3:>11.2f}{d / 1e3 / kept:>10.3f}{100 * d / window:>7.1f}%")


if __name__ == "__main__":
    main()
