#!/usr/bin/python3
"""The candidates against the default, from the kit's matrix step: for each
batch size and precision, each candidate's samples/s over the default's in
the same round (alternated rounds, so a drift of the machine moves both),
their median and spread, and the verdict: a candidate may become the
default only if it wins in every round.

  python3 bench/gpu/matrix_table.py out/gpu/matrix/matrix

Reads TAG_BATCH_PREC_ROUND.json (train_mlp --summary-json) for TAG default
and each candidate. Exit status: 0, or 2 for a folder with no such runs.
"""
import collections
import json
import os
import re
import statistics
import sys

NAME = re.compile(r"^(?P<tag>[a-z0-9_]+)_(?P<batch>\d+)_(?P<prec>fp32|tf32)_(?P<round>\d+)\.json$")


def samples_per_s(path):
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError):
        return None
    d = d[0] if isinstance(d, list) and d else d
    return d.get("samples_per_s") if isinstance(d, dict) else None


def collect(folder):
    """{(batch, prec): {round: {tag: samples/s}}}"""
    runs = collections.defaultdict(lambda: collections.defaultdict(dict))
    for name in os.listdir(folder):
        m = NAME.match(name)
        if m:
            sps = samples_per_s(os.path.join(folder, name))
            if sps:
                runs[(int(m["batch"]), m["prec"])][int(m["round"])][m["tag"]] = sps
    return runs


def verdicts(runs):
    """Rows: batch, precision, candidate, the per-round ratios, their median, the verdict."""
    rows = []
    for (batch, prec), rounds in sorted(runs.items()):
        tags = sorted({t for r in rounds.values() for t in r} - {"default"})
        for tag in tags:
            ratios = [r[tag] / r["default"] for _, r in sorted(rounds.items()) if tag in r and "default" in r]
            if not ratios:
                continue
            verdict = ("wins every round" if min(ratios) > 1 else "loses every round" if max(ratios) < 1
                       else "undecided")
            rows.append({"batch": batch, "precision": prec, "candidate": tag, "ratios": ratios,
                         "median": statistics.median(ratios), "verdict": verdict})
    return rows


def main(argv):
    if len(argv) != 1:
        print("usage: matrix_table.py MATRIX_FOLDER", file=sys.stderr)
        return 2
    runs = collect(argv[0]) if os.path.isdir(argv[0]) else {}
    rows = verdicts(runs)
    if not rows:
        print(f"matrix_table.py: {argv[0]}: no default and candidate runs in it", file=sys.stderr)
        return 2
    print(f"{'batch':>5} {'prec':4} {'candidate':10} {'median':>7} {'spread':>13}  per round / verdict")
    for r in rows:
        print(f"{r['batch']:>5} {r['precision']:4} {r['candidate']:10} {r['median']:7.3f} "
              f"{min(r['ratios']):6.3f}-{max(r['ratios']):.3f}  {' '.join(f'{x:.3f}' for x in r['ratios'])}: "
              f"{r['verdict']}")
    print("ratio: the candidate's samples/s over the default's in the same round (> 1: faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
