#!/usr/bin/env python3
"""Medians of bench_engine and its two targets, as a small table.

    python3 tools/bench_ratio.py build/bin/bench_engine            # runs it (5 repetitions)
    python3 tools/bench_ratio.py build/bin/bench_engine --repetitions 9 --filter Mlp
    build/bin/bench_engine --benchmark_format=json ... > b.json
    python3 tools/bench_ratio.py --json b.json                     # reads saved output ('-': stdin)

Targets: BM_PushNoop median <= 1 us; BM_MlpStep / BM_MlpGemmFloor <= 1.15.
Exit status: 0, or 1 with --check when a target is missed or its benchmark is
absent, 2 for bad usage or unreadable output. Python 3 standard library only.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

PUSH = "BM_PushNoop"
STEP, FLOOR, PAIRED = "BM_MlpStep", "BM_MlpGemmFloor", "BM_MlpStepPaired"
PUSH_TARGET_US = 1.0
RATIO_TARGET = 1.15
TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


def fail(msg):
    print(f"bench_ratio: {msg}", file=sys.stderr)
    sys.exit(2)


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def run_bench(binary, repetitions, filt, extra):
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        fail(f"'{binary}' is not an executable (build it: cmake --build BUILD --target bench_engine)")
    cmd = [binary, "--benchmark_format=json", f"--benchmark_repetitions={repetitions}",
           "--benchmark_report_aggregates_only=true", "--benchmark_enable_random_interleaving=true"]
    if filt:
        cmd.append(f"--benchmark_filter={filt}")
    cmd += extra
    print("running: " + " ".join(cmd), file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        fail(f"{binary} exited with status {proc.returncode}")
    return proc.stdout


def family(name):
    """'BM_PushToExecute/iterations:2000/manual_time_median' -> 'BM_PushToExecute'."""
    base = name.split("/")[0]
    for suffix in ("_mean", "_median", "_stddev", "_cv"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def medians(doc):
    """Median real time per benchmark family, in microseconds, and the median of
    BM_MlpStepPaired's `ratio` counter (None when absent).

    Uses the 'median' aggregate when the run had repetitions, else the median of
    the plain iteration entries."""
    agg, plain, paired = {}, {}, []
    for b in doc.get("benchmarks", []):
        if b.get("error_occurred"):
            fail(f"{b.get('name')}: {b.get('error_message', 'error')}")
        unit = TO_US.get(b.get("time_unit", "ns"))
        if unit is None or "real_time" not in b:
            continue
        fam = family(b.get("run_name", b["name"]))
        t = b["real_time"] * unit
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                agg[fam] = t
                if fam == PAIRED and "ratio" in b:
                    paired = [b["ratio"]]
        else:
            plain.setdefault(fam, []).append(t)
            if fam == PAIRED and "ratio" in b and not agg.get(fam):
                paired.append(b["ratio"])
    out = {fam: statistics.median(ts) for fam, ts in plain.items()}
    out.update(agg)
    return out, (statistics.median(paired) if paired else None)


def human(us):
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.3f} us"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary", nargs="?", help="bench_engine executable to run")
    ap.add_argument("--json", help="read saved --benchmark_format=json output instead ('-' for stdin)")
    ap.add_argument("--repetitions", type=int, default=5, help="repetitions when running (default 5)")
    ap.add_argument("--filter", default="", help="--benchmark_filter when running")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args, extra = ap.parse_known_args()
    if bool(args.binary) == bool(args.json):
        fail("give either a bench_engine executable or --json FILE (see --help)")
    if args.repetitions < 1:
        fail(f"--repetitions must be >= 1, got {args.repetitions}")

    load_before = loadavg()
    if args.json:
        try:
            text = sys.stdin.read() if args.json == "-" else open(args.json).read()
        except OSError as e:
            fail(f"cannot read '{args.json}': {e.strerror}")
    else:
        text = run_bench(args.binary, args.repetitions, args.filter, extra)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        fail(f"not Google Benchmark JSON ({e.msg} at line {e.lineno}); run with --benchmark_format=json")
    med, paired_ratio = medians(doc)
    if not med:
        fail("no benchmark results in the output")

    width = max(len(n) for n in med) + 2
    order = [PUSH, "BM_PushNoopWorkerRunning", "BM_PushToExecute", "BM_WaitFinished", "BM_WaitPending", STEP, FLOOR,
             PAIRED]
    names = [n for n in order if n in med] + sorted(n for n in med if n not in order)
    print(f"{'benchmark':<{width}}{'median':>12}")
    for name in names:
        print(f"{name:<{width}}{human(med[name]):>12}")
    ctx = doc.get("context", {})
    if not args.json:
        print(f"load average before/after: {load_before} / {loadavg()}  (shared machine: rerun when it is high)")
    elif ctx.get("load_avg"):
        print("load average: " + " ".join(f"{x:.2f}" for x in ctx["load_avg"]))

    print()
    print(f"{'target':<34}{'measured':>10}{'limit':>8}  result")
    ok = True
    if PUSH in med:
        met = med[PUSH] <= PUSH_TARGET_US
        ok &= met
        print(f"{'push per op (BM_PushNoop), us':<34}{med[PUSH]:>10.3f}{PUSH_TARGET_US:>8.2f}  {'met' if met else 'MISSED'}")
    else:
        ok = False
        print(f"{'push per op (BM_PushNoop), us':<34}{'absent':>10}{PUSH_TARGET_US:>8.2f}  -")
    if STEP in med and FLOOR in med:
        ratio = med[STEP] / med[FLOOR]
        met = ratio <= RATIO_TARGET
        ok &= met
        print(f"{'BM_MlpStep / BM_MlpGemmFloor':<34}{ratio:>10.3f}{RATIO_TARGET:>8.2f}  {'met' if met else 'MISSED'}"
              f"   ({human(med[STEP])} / {human(med[FLOOR])})")
    else:
        ok = False
        print(f"{'BM_MlpStep / BM_MlpGemmFloor':<34}{'absent':>10}{RATIO_TARGET:>8.2f}  -")
    if paired_ratio is not None:  # informational: robust to load drift, not the target's definition
        met = paired_ratio <= RATIO_TARGET
        print(f"{'  same, paired (BM_MlpStepPaired)':<34}{paired_ratio:>10.3f}{RATIO_TARGET:>8.2f}  "
              f"{'met' if met else 'MISSED'}   (median of step/floor, alternated)")
    return 1 if (args.check and not ok) else 0


if __name__ == "__main__":
    sys.exit(main())
