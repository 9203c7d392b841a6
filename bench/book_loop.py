#!/usr/bin/python3
"""The book's `y = x + 1` loop at a size where the op is the work: x of
2000 x 2000 (16 MB), 1000 iterations, a barrier each op against one barrier
at the end, under each framework layer's allocation policy.

  PYTHONPATH=build/python /usr/bin/python3 bench/book_loop.py
  ... --n 1000 --iters 200 --rounds 3          # smaller and quicker
  ... --json                                   # the figures as JSON on standard output

Variants, each timed both ways in every round (the order alternated round
by round, so a slow moment of a shared machine does not always hit the same
one), medians over the rounds:

  asyncmlp.mxnet   policy 'run' (MXNet's: an op's outputs get memory when it
                   starts); x from np.ones (the data queue); y.wait_to_read()
                   each op, npx.waitall() at the end
  asyncmlp.torch   policy 'stream' (PyTorch's caching allocator);
                   torch.cuda.synchronize() each op and at the end
  asyncmlp         the module's default, 'stream'; y.wait_to_read(), waitall()
  asyncmlp         set_alloc('enqueue'): every queued op holds its 16 MB
                   output until it has run, so the one-barrier loop holds
                   the backlog: --enqueue-iters (100) iterations, not --iters,
                   and its peak is that many outputs

The layers set the process's policy at import; one process imports both and
calls asyncmlp.set_alloc(policy) before each variant.

Targets (the first three): one barrier / a barrier each op <= 1.1 (the op,
not the barrier, is the time, so one barrier at the end buys nothing but
must cost nothing), and the tracked peak growth <= 4 x the op's 16 MB in
either loop (a dropped y's block serves the next op). Under enqueue the peak
is the backlog's, iterations x 16 MB: the figure this project exists to show.

Exit status: 0 (the targets are reported, not enforced; 1 with --check when
one is missed); 1 for a failed run (out of memory: one line); 2 for a bad
option (one line).
"""
import argparse
import json
import os
import statistics
import sys
import time

import asyncmlp as am
import asyncmlp.mxnet as mx  # sets 'run' at import
import asyncmlp.torch as torch  # sets 'stream' at import
from asyncmlp.mxnet import np, npx

PROG = "book_loop.py"
RATIO_TARGET = 1.1  # one barrier / a barrier each op
PEAK_TARGET_OPS = 4  # tracked peak growth, in outputs of the op


sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
from chapter import OneLineParser, human_s, mb  # noqa: E402  (the chapter's one-line errors and units)


# --- the variants: how x is made, the barrier each op and the one at the end;
# the book's two loops are the same for all
class Loop:
    def each(self, x, iters):
        for _ in range(iters):
            y = x + 1
            self.barrier(y)

    def one(self, x, iters):
        for _ in range(iters):
            y = x + 1
        self.waitall()


class Mxnet(Loop):
    name, policy = "asyncmlp.mxnet", mx.ALLOC

    def make(self, n, dev):
        return np.ones((n, n), ctx=dev)

    def barrier(self, y):
        y.wait_to_read()

    def waitall(self):
        npx.waitall()


class Torch(Loop):
    name, policy = "asyncmlp.torch", torch.ALLOC

    def make(self, n, dev):
        self.device = dev
        return torch.ones((n, n), device=dev)

    def barrier(self, y):  # PyTorch's tab has no wait for one tensor
        torch.cuda.synchronize(self.device)

    def waitall(self):
        torch.cuda.synchronize(self.device)


class Plain(Loop):
    name = "asyncmlp"

    def __init__(self, policy):
        self.policy = policy

    def make(self, n, dev):
        return am.ones((n, n), device=dev)

    def barrier(self, y):
        y.wait_to_read()

    def waitall(self):
        am.waitall()


def timed(loop, x, iters, dev):
    """The loop's wall time and the tracked peak it grew the pool by."""
    am.waitall()
    am.reset_peaks(dev)
    base = am.memory_stats(dev)["bytes_in_use"]
    t0 = time.perf_counter()
    loop(x, iters)
    s = time.perf_counter() - t0
    return s, am.memory_stats(dev)["peak_bytes"] - base


def parse_args(argv):
    p = OneLineParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=2000, help="x is n x n (2000: 16 MB)")
    p.add_argument("--iters", type=int, default=1000, help="iterations of each loop (1000)")
    p.add_argument("--enqueue-iters", type=int, default=100,
                   help="iterations under enqueue, whose one-barrier loop holds every output (100)")
    p.add_argument("--rounds", type=int, default=5, help="alternated rounds; medians are quoted (5)")
    p.add_argument("--device", default="cpu", help="cpu, cpu:N, cuda, cuda:N or auto (cpu)")
    p.add_argument("--json", action="store_true", help="the figures as JSON on standard output (the table to stderr)")
    p.add_argument("--check", action="store_true", help="exit 1 when a variant with targets misses one")
    args = p.parse_args(argv)
    for name in ("n", "iters", "enqueue_iters", "rounds"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    try:
        args.dev = ((am.cuda(0) if am.num_gpus() > 0 else am.cpu(0)) if args.device == "auto"
                    else am.device(args.device))
        am.ones((1,), device=args.dev).wait_to_read()
    except am.Error as e:
        p.error(f"--device {args.device}: {e}")
    return args


def run(args, say):
    dev, n = args.dev, args.n
    op_bytes = n * n * 4
    variants = [(Mxnet(), args.iters, True), (Torch(), args.iters, True), (Plain("stream"), args.iters, True),
                (Plain("enqueue"), args.enqueue_iters, False)]
    say(f"{PROG}: y = x + 1, x of {n} x {n} ({mb(op_bytes)} an op's output), on {dev}: {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.2f}; {args.rounds} alternated rounds")
    say(f"  under enqueue {args.enqueue_iters} iterations, not {args.iters}: each queued op holds its "
        f"{mb(op_bytes)} output until it has run, so the one-barrier loop holds "
        f"{mb(args.enqueue_iters * op_bytes)}")
    policy = am.alloc()
    rows = []
    try:
        xs = []
        for v, iters, _ in variants:  # x, and a warm-up of each loop (the pool caches its blocks)
            am.set_alloc(v.policy)
            x = v.make(n, dev)
            am.waitall()
            warm = iters if v.policy == "enqueue" else min(iters, 20)
            v.each(x, warm)
            v.one(x, warm)
            xs.append(x)
        times = [{"each": [], "one": [], "each_peak": [], "one_peak": []} for _ in variants]
        for r in range(args.rounds):
            for (v, iters, _), x, t in zip(variants, xs, times):
                am.set_alloc(v.policy)
                for mode in (("each", "one") if r % 2 == 0 else ("one", "each")):
                    s, peak = timed(getattr(v, mode), x, iters, dev)
                    t[mode].append(s)
                    t[mode + "_peak"].append(peak)
            say(f"  round {r + 1}: " + "; ".join(
                f"{v.name} {v.policy} {t['one'][-1] / t['each'][-1]:.3f}" for (v, _, _), t in zip(variants, times)))
    finally:
        am.set_alloc(policy)
    for (v, iters, targets), t in zip(variants, times):
        each, one = statistics.median(t["each"]), statistics.median(t["one"])
        round_ratios = [o / e for o, e in zip(t["one"], t["each"])]
        row = {"variant": v.name, "policy": v.policy, "iters": iters, "each_s": t["each"], "one_s": t["one"],
               "each_median_s": each, "one_median_s": one, "ratio": one / each,
               "round_ratios": round_ratios, "each_peak_growth_bytes": max(t["each_peak"]),
               "one_peak_growth_bytes": max(t["one_peak"]), "op_bytes": op_bytes, "targets": targets}
        if targets:
            row["meets_ratio"] = row["ratio"] <= RATIO_TARGET
            row["meets_peak"] = max(row["each_peak_growth_bytes"], row["one_peak_growth_bytes"]) <= \
                PEAK_TARGET_OPS * op_bytes
        rows.append(row)
    return {"n": n, "iters": args.iters, "enqueue_iters": args.enqueue_iters, "rounds": args.rounds,
            "device": str(dev), "cores": os.cpu_count(), "load_average": os.getloadavg()[0],
            "ratio_target": RATIO_TARGET, "peak_target_bytes": PEAK_TARGET_OPS * op_bytes, "rows": rows}


def table(f, say):
    say(f"\nmedians of {f['rounds']}; targets (the first three): one / each <= {f['ratio_target']}, "
        f"peak growth <= {mb(f['peak_target_bytes'])} ({PEAK_TARGET_OPS} outputs)")
    say("  variant          policy    iters   barrier each   one barrier   one / each (rounds)       "
        "peak growth: each / one      targets")
    for r in f["rows"]:
        rr = r["round_ratios"]
        verdict = ("met" if r["meets_ratio"] and r["meets_peak"] else
                   "missed: " + ", ".join(k for k, ok in (("ratio", r["meets_ratio"]), ("peak", r["meets_peak"]))
                                          if not ok)) if r["targets"] else \
            f"none (the backlog's: {r['iters']} x {mb(r['op_bytes'])})"
        say(f"  {r['variant']:<16} {r['policy']:<8}{r['iters']:>6}{human_s(r['each_median_s']):>15}"
            f"{human_s(r['one_median_s']):>14}{r['ratio']:>9.3f} ({min(rr):.3f}-{max(rr):.3f})"
            f"{mb(r['each_peak_growth_bytes']):>14} / {mb(r['one_peak_growth_bytes']):<10} {verdict}")
    for r in f["rows"]:
        say(f"  {r['variant']} {r['policy']}: per op {human_s(r['each_median_s'] / r['iters'])} with a barrier each, "
            f"{human_s(r['one_median_s'] / r['iters'])} with one")


def main(argv):
    args = parse_args(argv)
    out = sys.stderr if args.json else sys.stdout

    def say(line):
        print(line, file=out, flush=True)

    f = run(args, say)
    table(f, say)
    if args.json:
        json.dump(f, sys.stdout, indent=1)
        sys.stdout.write("\n")
    missed = [r for r in f["rows"] if r["targets"] and not (r["meets_ratio"] and r["meets_peak"])]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except am.Error as e:  # out of memory, a kernel error: one line
        sys.stderr.write(f"{PROG}: {e}\n")
        sys.exit(1)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.stderr.write(f"{PROG}: standard output was closed\n")
        sys.exit(1)
