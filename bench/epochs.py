#!/usr/bin/python3
"""epochs.py — what the second epoch changes: `none` against `batch` when the
pool already holds the backlog's blocks.

  python3 bench/epochs.py [--train-mlp build/bin/train_mlp] [--runs 5] [--epochs 3]
                          [--config configs/quick.ini] [--fraction 0.5] [--out out/epochs]

First a synchronized run measures the device's time per batch d; then
`train_mlp --config CONFIG --device cpu --compare --epochs E --host-work
FRACTION*d` runs RUNS times, each writing its summary JSON. It prints, per
epoch, the median over the runs of each mode's samples/s over `batch`'s in
the same epoch, `none`'s most reserved bytes against its first epoch's,
and the fresh memory each epoch backed (and what backing it cost). A
benchmark, not a test: timings on a shared machine vary, the medians are
what it reports.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"epochs.py: error: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--train-mlp", default=os.path.join(ROOT, "build", "bin", "train_mlp"))
    p.add_argument("--config", default=os.path.join(ROOT, "configs", "quick.ini"))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--fraction", type=float, default=0.5, help="host work per batch as a fraction of d")
    p.add_argument("--out", default=os.path.join(ROOT, "out", "epochs"))
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    base = [a.train_mlp, "--config", a.config, "--device", "cpu", "--quiet"]
    probe = os.path.join(a.out, "d.json")
    run(base + ["--sync", "batch", "--batches", "40", "--summary-json", probe])
    d = json.load(open(probe))[0]["device_s_per_batch"]
    host = a.fraction * d
    print(f"epochs.py: d = {d * 1e3:.3f} ms per batch (synchronized); host work {host * 1e3:.3f} ms "
          f"(h/d about {a.fraction}); {a.runs} runs of --compare --epochs {a.epochs}")
    runs = []
    for i in range(a.runs):
        path = os.path.join(a.out, f"run{i + 1}.json")
        run(base + ["--compare", "--epochs", str(a.epochs), "--host-work", f"{host * 1e6:.0f}us", "--summary-json", path])
        runs.append({r["label"]: r for r in json.load(open(path))})
    modes = list(runs[0])
    print(f"\nmedian over {a.runs} runs, samples/s over batch's in the same epoch")
    print("mode       " + "".join(f"  epoch {e:<3}" for e in range(1, a.epochs + 1)))
    for m in modes:
        cells = []
        for e in range(a.epochs):
            ratios = [r[m]["epochs"]["each"][e]["samples_per_s"] / r["batch"]["epochs"]["each"][e]["samples_per_s"]
                      for r in runs]
            cells.append(f"{statistics.median(ratios):10.2f}")
        print(f"{m:10} " + " ".join(cells))
    print("\nnone: reserved MB (peak) and fresh MB backed (the worker's seconds), median over the runs")
    for e in range(a.epochs):
        res = statistics.median(r["none"]["epochs"]["each"][e]["peak_reserved_bytes"] for r in runs) / 1e6
        fresh = statistics.median(r["none"]["epochs"]["each"][e]["fresh_bytes"] for r in runs) / 1e6
        secs = statistics.median(r["none"]["epochs"]["each"][e]["fresh_worker_s"] for r in runs)
        print(f"  epoch {e + 1}: reserved {res:8.1f}  fresh {fresh:8.1f} ({secs:.3f} s)")
    warm = [statistics.median(r["none"]["epochs"]["each"][e]["samples_per_s"] / r["batch"]["epochs"]["each"][e]["samples_per_s"]
                              for r in runs) for e in range(1, a.epochs)]
    flat = max(r["none"]["epochs"]["each"][e]["peak_reserved_bytes"] / r["none"]["epochs"]["each"][0]["peak_reserved_bytes"]
               for r in runs for e in range(1, a.epochs))
    print(f"\nwarm epochs: none / batch {', '.join(f'{w:.2f}' for w in warm)} (goal >= 1.3); none's reserved bytes "
          f"after epoch 1 at most {flat:.3f}x its first epoch's peak (goal <= 1.05)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
