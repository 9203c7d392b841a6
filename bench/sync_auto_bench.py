#!/usr/bin/env python3
"""Does --sync auto pick as well as the best fixed policy that fits its budget?

    python3 bench/sync_auto_bench.py build-cpu/bin/train_mlp
    python3 bench/sync_auto_bench.py build-cpu/bin/train_mlp --fractions 0.25,0.5,1 --repeats 5 --budget 16MB
    python3 bench/sync_auto_bench.py build-cpu/bin/train_mlp --batches 1000   # auto's measuring amortized

The target: `--sync auto --memory-budget B` within 5% of the samples/s
of the fastest fixed policy whose measured memory increase stays within B,
and never over B itself. A benchmark, not a timed test: it times whole runs.

At each fraction f of the device's time per batch d, the host work is the
one `train_mlp --sweep` calibrates for h = f*d (a sweep of two batches per
mode is run first, only for its calibration: its summary's host_work_s).
Then `--sync auto --memory-budget B` and the fixed policies --compare runs
(batch, none, every=K for each K of --compare-every, bounded at two batches'
bytes) run one after the other, the order rotated each repeat so a slow
moment of the machine does not always hit the same policy. Printed per
fraction: each policy's median samples/s and largest measured memory
increase over the repeats, which fixed ones fit B, and auto's median over
the best fitting one's. B defaults to four batches' bytes (the calibration
run's bytes per batch), rounded up to a MB: above bounded's two batches,
below what every=10 and none hold while h < d.

Exit status: 0; 1 with --check when auto is more than 5% slower than the
best fitting policy or over the budget; 2 for bad usage or a run that failed.
Python 3 standard library only.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

PROG = "sync_auto_bench"
TARGET = 0.95  # auto's samples/s over the best fitting fixed policy's
MB = 1e6
UNITS = {"": 1, "b": 1, "k": 1024, "kib": 1024, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30,
         "kb": 1000, "mb": 1000 ** 2, "gb": 1000 ** 3}


def fail(msg):
    print("%s: error: %s" % (PROG, msg), file=sys.stderr)
    sys.exit(2)


def parse_bytes(text):
    m = re.fullmatch(r"(\d+)\s*([a-zA-Z]*)", text.strip())
    if not m or m.group(2).lower() not in UNITS:
        raise argparse.ArgumentTypeError("must be a byte size such as 16MB or 8MiB (got '%s')" % text)
    return int(m.group(1)) * UNITS[m.group(2).lower()]


def parse_fractions(text):
    try:
        out = [float(t) for t in text.split(",")]
    except ValueError:
        out = []
    if not out or any(not 0 <= f <= 10 for f in out) or len(set(out)) != len(out):
        raise argparse.ArgumentTypeError("must be distinct fractions of d in [0, 10], e.g. 0.5,1 (got '%s')" % text)
    return out


def run(train, args, scratch, name):
    """One train_mlp run; its summary's first run and the process's seconds."""
    path = os.path.join(scratch, name + ".json")
    cmd = [train] + args + ["--quiet", "--summary-json", path]
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    took = time.monotonic() - t0
    if p.returncode != 0:
        fail("%s exited %d: %s" % (" ".join(cmd), p.returncode, (p.stderr.strip().splitlines() or [""])[-1]))
    with open(path) as f:
        return json.load(f), took


def main(argv):
    class Parser(argparse.ArgumentParser):
        def error(self, message):  # one line, exit 2
            fail(message)

    ap = Parser(prog=PROG, description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n", 1)[1],
                formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("train_mlp", help="the train_mlp to run (e.g. build-cpu/bin/train_mlp)")
    ap.add_argument("--config", default=None, help="the INI to run (default: configs/quick.ini)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--fractions", type=parse_fractions, default=[0.5, 1.0], help="h/d levels (default 0.5,1)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget", type=parse_bytes, default=None,
                    help="--memory-budget (default: four batches' bytes, rounded up to a MB)")
    ap.add_argument("--batches", type=int, default=None,
                    help="batches a run (default: the config's); auto measures its first 11 in any run, so a "
                         "longer run shows what that costs once it is amortized")
    ap.add_argument("--check", action="store_true", help="exit 1 when auto misses the target")
    a = ap.parse_args(argv)
    if not (os.path.isfile(a.train_mlp) and os.access(a.train_mlp, os.X_OK)):
        fail("%s: not an executable (build train_mlp first)" % a.train_mlp)
    if a.repeats < 1:
        fail("--repeats must be at least 1 (got %d)" % a.repeats)
    if a.batches is not None and a.batches < 20:
        fail("--batches must be at least 20: auto measures 11 first (got %d)" % a.batches)
    length = ["--batches", str(a.batches)] if a.batches else []
    config = a.config or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "quick.ini")
    if not os.path.isfile(config):
        fail("--config %s: no such file" % config)
    base = ["--config", config, "--device", a.device]

    with tempfile.TemporaryDirectory(prefix="amlp_sync_auto_bench_") as scratch:
        # The sweep's own calibration of the host work, two batches a mode.
        fr = ",".join("%g" % f for f in a.fractions)
        cal, _ = run(a.train_mlp, base + ["--sweep", "--sweep-fractions", fr, "--batches", "2"], scratch, "cal")
        d = cal["sweep_model"]["device_s"]
        work = {}
        for row in cal["sweep"]:
            work.setdefault(row["fraction"], row["host_work_s"])
        first = cal["runs"][0]
        bpb = max(r["bytes_per_batch"] for r in cal["runs"])
        budget = a.budget or -(-4 * bpb // 1000000) * 1000000
        fixed = {"batch": ["--sync", "batch"], "none": ["--sync", "none"]}
        for c in cal["sweep_model"]["curves"]:
            if re.fullmatch(r"every=\d+", c["mode"]):
                fixed[c["mode"]] = ["--sync", c["mode"]]
        fixed["bounded"] = ["--sync", "none", "--max-pending-bytes", str(2 * bpb)]
        policies = ["auto"] + list(fixed)
        print("%s: %s, batches of %d, d = %.3f ms (the sweep's), %.2f MB per batch, budget %.1f MB; "
              "%d repeats, OPENBLAS_CORETYPE=%s" % (PROG, os.path.basename(config), first["batch_size"], d * 1e3,
                                                   bpb / MB, budget / MB, a.repeats,
                                                   os.environ.get("OPENBLAS_CORETYPE", "")))
        missed = False
        for f in a.fractions:
            hw_ns = int(round(work[f] * 1e9))
            hw = ["--host-work", "%dns" % hw_ns] if hw_ns else []
            got = {p: [] for p in policies}
            chose = []
            for rep in range(a.repeats):
                k = rep % len(policies)
                for p in policies[k:] + policies[:k]:
                    args = base + hw + length + (["--sync", "auto", "--memory-budget", str(budget)] if p == "auto"
                                                 else fixed[p])
                    s, took = run(a.train_mlp, args, scratch, "run")
                    r = s[0]
                    got[p].append((r["samples_per_s"], r["mem_increase_bytes"], took, r["host_s_per_batch"],
                                   r["device_s_per_batch"]))
                    if p == "auto":
                        m = re.match(r"(?:.*: )?chose ([^\s:;,]+)", r["sync_auto"] or "")
                        chose.append(m.group(1) if m else "?")
            print("\nh/d = %g: host work %.3f ms per batch (wait), %d batches a run" % (f, hw_ns / 1e6, r["batches"]))
            print("%-10s %10s %10s %10s %8s %8s %6s" % ("policy", "samp/s", "mem MB", "process s", "h ms", "d ms",
                                                        "fits"))
            med = {}
            for p in policies:
                rows = got[p]
                med[p] = statistics.median(x[0] for x in rows)
                mem = max(x[1] for x in rows)
                print("%-10s %10.0f %10.1f %10.2f %8.3f %8.3f %6s" % (
                    p, med[p], mem / MB, statistics.median(x[2] for x in rows),
                    statistics.median(x[3] for x in rows) * 1e3, statistics.median(x[4] for x in rows) * 1e3,
                    "yes" if mem <= budget else "no"))
            fits = [p for p in fixed if max(x[1] for x in got[p]) <= budget]
            best = max(fits, key=lambda p: med[p]) if fits else None
            auto_mem = max(x[1] for x in got["auto"])
            ratio = med["auto"] / med[best] if best else float("nan")
            # What the user waits for: the whole process, auto's measuring batches included
            # (samples/s flatters auto: its run starts with the pool warmed by them).
            secs = {p: statistics.median(x[2] for x in got[p]) for p in policies}
            by_process = secs[best] / secs["auto"] if best else float("nan")
            print("auto chose %s; auto / best fixed within the budget (%s): %.3f by samples/s, %.3f by process "
                  "seconds (target >= %.2f); auto's memory at most %.1f MB of the %.1f MB budget (%s)" % (
                      ", ".join(sorted(set(chose))), best, ratio, by_process, TARGET, auto_mem / MB, budget / MB,
                      "within" if auto_mem <= budget else "OVER"))
            missed |= not (ratio >= TARGET) or auto_mem > budget
        print("\nsamp/s: the median over the repeats of each run's samples/s (its summary's; auto's excludes the 11"
              "\nsynchronized batches it measures first, which the process seconds include, and its run starts with"
              "\nthe pool they warmed, the fixed policies' cold); mem MB: the largest measured memory increase over"
              "\nthe repeats; fits: that within the budget.")
    return 1 if a.check and missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
