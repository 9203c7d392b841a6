#!/usr/bin/env python3
"""table.py — the short table of run_gpu_checks.sh's perf phases.

  python3 bench/gpu/table.py out/gpu/perf64 out/gpu/perf256 out/gpu/perf1024

Each folder holds one batch size's alternated rounds: train_{batch,none}_R.json
(train_mlp --summary-json), torch_R.json (torch_mlp.py: eager and graph, both
sync modes) and gemm_floor.json (bench_cuda_gemm's floor at that batch). Per
batch size and peer: median samples/s over the rounds, the memory increase
beside it, and the ratio to the cuBLAS floor (the eight GEMMs of one step).
"""
import glob
import json
import os
import statistics
import sys

MiB = 2**20


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def floor_us(folder):
    """{tf32: median microseconds per step} from the floor benchmark."""
    out = {}
    for b in (load(os.path.join(folder, "gemm_floor.json")) or {}).get("benchmarks", []):
        if b.get("aggregate_name") == "median" and "Floor/tf32:" in b["name"]:
            out[b["name"].split("tf32:")[1][0]] = b["real_time"]
    return out


def rows(folder):
    """(batch, [(peer, mode, samples/s, +MiB, loss)], floor) for one perf folder."""
    found = []
    batch = None
    for mode in ("batch", "none"):
        runs = [r for p in sorted(glob.glob(os.path.join(folder, f"train_{mode}_[0-9]*.json")))
                for r in (load(p) or [])]
        if runs:
            batch = runs[0]["batch_size"]
            found.append(("asyncmlp", mode, statistics.median(r["samples_per_s"] for r in runs),
                          statistics.median(r["mem_increase_bytes"] for r in runs) / MiB, runs[-1].get("final_loss")))
    peers = [p for f in sorted(glob.glob(os.path.join(folder, "torch_[0-9]*.json"))) for p in (load(f) or [])]
    for capture in ("eager", "graph"):
        for mode in ("batch", "none"):
            mine = [p for p in peers if p.get("capture") == capture and p.get("mode") == mode]
            if mine:
                batch = batch or mine[0]["batch_size"]
                found.append((f"torch-{capture}", mode, statistics.median(p["samples_per_s"] for p in mine),
                              statistics.median(p["mem_increase_bytes"] for p in mine) / MiB, mine[-1].get("final_loss")))
    return batch, found, floor_us(folder)


def main(folders):
    hdr = f"{'batch':>5} {'peer':14} {'sync':5} {'samples/s':>11} {'x floor':>7} {'+MiB':>8} {'final loss':>11}"
    print(hdr)
    print("-" * len(hdr))
    notes = []
    for folder in folders:
        batch, found, floor = rows(folder)
        if not found:
            print(f"{'?':>5} (no results in {folder})")
            continue
        fp32 = floor.get("0")
        floor_sps = batch * 1e6 / fp32 if fp32 else None
        for peer, mode, sps, inc, loss in found:
            ratio = f"{floor_sps / sps:7.2f}" if floor_sps else f"{'-':>7}"
            loss_s = f"{loss:.6g}" if isinstance(loss, (int, float)) else "-"
            print(f"{batch:>5} {peer:14} {mode:5} {sps:11.0f} {ratio} {inc:8.1f} {loss_s:>11}")
        if fp32:
            print(f"{batch:>5} {'cuBLAS floor':14} {'':5} {floor_sps:11.0f} {1.0:7.2f} "
                  f"{'':8} {'':>11}   ({fp32:.1f} us/step FP32"
                  + (f", {floor['1']:.1f} TF32)" if "1" in floor else ")"))
        by = {(p, m): s for p, m, s, _, _ in found}
        for m in ("batch", "none"):
            ours = by.get(("asyncmlp", m))
            for peer in ("torch-eager", "torch-graph"):
                if ours and by.get((peer, m)):
                    notes.append(f"batch {batch} {m}: asyncmlp / {peer} = {ours / by[(peer, m)]:.2f}")
    print()
    for n in notes:
        print(n)
    print("samples/s: medians over the alternated rounds; x floor: the step's time over the eight cuBLAS GEMMs'")
    print("(FP32); +MiB: peak minus start of tracked bytes (asyncmlp), of torch.cuda.max_memory_allocated (peers).")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: table.py PERF_FOLDER...", file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1:])
