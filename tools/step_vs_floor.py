#!/usr/bin/env python3
"""The driver's whole training step against its GEMM floor, every sync mode.

    python3 tools/step_vs_floor.py                     # build/, 5 rounds, the book's shape, 30 batches
    python3 tools/step_vs_floor.py --rounds 3 --batches 100 --build build

Each round runs `bench_engine --benchmark_filter=BM_MlpGemmFloor` (the step's
eight GEMMs alone through CBLAS, batch 1024, 512 -> 2048 -> 512 -> 1) and then
`train_mlp --device cpu --compare` at the same shape, back to back, so each
round's ratios compare runs seconds apart on the same machine. It prints each
round and the medians over the rounds:

  floor/s   1024 / the floor's step time (samples/s)
  <mode>/s  train_mlp's samples/s for that mode (data, loss, item() included,
            the first batch's fresh memory too)
  batch/floor, <mode>/batch   the ratios the goals are stated in

The environment passes through: set OPENBLAS_CORETYPE (or unset it) for
the run to compare the two kernel sets. Python 3 standard library only; exit
status 2 for bad usage or a program that failed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

SHAPE = ["--batch-size", "1024", "--features", "512", "--hidden", "2048,512"]
BATCH = 1024


def fail(msg):
    print(f"step_vs_floor: {msg}", file=sys.stderr)
    sys.exit(2)


def run(cmd):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        fail(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip().splitlines()[-1:] or ''}")
    return proc.stdout


def floor_samples_per_s(bench):
    out = run([bench, "--benchmark_filter=^BM_MlpGemmFloor", "--benchmark_min_time=1", "--benchmark_format=json"])
    runs = [b for b in json.loads(out)["benchmarks"] if b["name"].startswith("BM_MlpGemmFloor")]
    if not runs:
        fail("bench_engine printed no BM_MlpGemmFloor")
    b = runs[0]
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
    return BATCH / (b["real_time"] * scale)


def modes_samples_per_s(train, batches, summary):
    run([train, "--device", "cpu", "--batches", str(batches), *SHAPE, "--compare", "--summary-json", summary])
    with open(summary) as f:
        return {r["label"]: (r["samples_per_s"], r["minor_faults_steady_per_batch"]) for r in json.load(f)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="the build folder (default: build)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of floor + train_mlp (default: 5)")
    ap.add_argument("--batches", type=int, default=30, help="train_mlp --batches (default: 30)")
    a = ap.parse_args()
    if a.rounds < 1 or a.batches < 1:
        fail("--rounds and --batches must be at least 1")
    bench, train = (os.path.join(a.build, "bin", n) for n in ("bench_engine", "train_mlp"))
    for p in (bench, train):
        if not os.access(p, os.X_OK):
            fail(f"'{p}' is not an executable (build it first: bash tools/test.sh --fast)")
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}, {a.rounds} rounds, "
          f"{a.batches} batches of {BATCH}, 512 -> 2048 -> 512 -> 1", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.rounds):
            floor = floor_samples_per_s(bench)
            modes = modes_samples_per_s(train, a.batches, os.path.join(tmp, "s.json"))
            rows.append((floor, modes))
            b = modes["batch"][0]
            cells = "  ".join(f"{m} {v[0]:7.0f} ({v[0] / b:.3f}x, {v[1]:g} faults)" for m, v in modes.items() if m != "batch")
            print(f"round {i + 1}: floor {floor:7.0f}/s  batch {b:7.0f}/s = {b / floor:.3f}x floor  {cells}", flush=True)
    names = list(rows[0][1])
    med = statistics.median
    print("\nmedians over the rounds")
    print(f"  floor            {med(r[0] for r in rows):8.0f} samples/s")
    print(f"  batch            {med(r[1]['batch'][0] for r in rows):8.0f} samples/s   "
          f"batch/floor {med(r[1]['batch'][0] / r[0] for r in rows):.3f}   (goal >= 0.92)")
    for m in names[1:]:
        print(f"  {m:<16} {med(r[1][m][0] for r in rows):8.0f} samples/s   "
              f"{m}/batch {med(r[1][m][0] / r[1]['batch'][0] for r in rows):.3f}   (goal >= 0.95)   "
              f"faults/batch (steady) {med(r[1][m][1] for r in rows):g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
