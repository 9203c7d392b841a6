#!/usr/bin/python3
"""scale_model.py — a model (not a measurement) of data-parallel training of
an MLP across GPUs: step time, samples/s, exposed communication and per-rank
memory, and where scaling stops; and, from figures measured here
(bench/mpi_allreduce), a prediction of the 2-rank CPU step to set beside the
measured one.

The all-reduce of B bytes over n ranks costs the ring model
    t(B) = 2(n-1)·α + 2(n-1)/n · B/β
(α: one step's latency, β: the bandwidth each rank's link gives the ring).
Backward runs last layer first; each layer's gradient reduction starts when
its backward is done and the previous reduction has finished (one
communication queue), so it overlaps the earlier layers' backward. The part
of the reductions finishing after the last backward op is exposed:
    step = forward + backward + exposed.
Gradients may be packed into buckets of at least `bucket` bytes (PyTorch DDP's
bucket_cap_mb): fewer α terms, a later start.

Published figures (interconnect β is nccl-tests' "bus bandwidth", which for
all-reduce is algbw·2(n-1)/n, i.e. exactly this model's β — NVIDIA/nccl-tests
doc/PERFORMANCE.md):
  NVLink   8×H100 SXM5 on NVSwitch: all_reduce_perf busbw 460–480 GB/s at large
           sizes (nccl-tests reference table, docs.alayanew.com "NCCL-tests in
           practice"; NVLink 4 is 450 GB/s per direction): β = 450 GB/s.
  IB       NDR 400 Gb/s, one ConnectX-7 per GPU: 50 GB/s line rate; tuned NCCL
           all-reduce across nodes reaches ~44 GB/s (fridayswithfaraday.com,
           "NCCL tuning", 88% of line rate; kubernetes.recipes reports ~35 GB/s
           on RoCE): β = 44 GB/s.
  α        per-hop latency ~1 µs over NVSwitch, 2 µs within a rack and 5 µs
           across a spine on NDR IB (same source): α = 1 µs (NVLink), 5 µs (IB).
Past one node (8 GPUs) the ring's slowest hop is IB, so n > 8 uses IB's α, β.
NCCL switches to trees (log n latency) for small messages at scale, so the
ring's 2(n-1)·α overstates latency at 512 GPUs: read those rows as an upper
bound. GPU compute: FP32 GEMMs at an assumed `--tflops` (H100 SXM's FP32 peak
is 67 TFLOP/s) plus `--launch-us` per kernel.

  /usr/bin/python3 tools/scale_model.py                       # the GPU table
  /usr/bin/python3 tools/scale_model.py --alpha-us 3.7 --beta-gbps 1.57 \\
      --forward-ms 47.2 --backward-ms 0.24,44.2,24.8 --ranks 2 --measured-step-ms 135
"""
import argparse
import sys

F32 = 4
NVLINK = ("NVLink", 1e-6, 450e9)
IB = ("InfiniBand NDR", 5e-6, 44e9)


def ring_s(nbytes, n, alpha, beta):
    return 0.0 if n == 1 else 2 * (n - 1) * alpha + 2 * (n - 1) / n * nbytes / beta


def layers(features, hidden):
    """(in, out) of each Dense, input first: Dense(h, relu)... then Dense(1)."""
    widths = [features] + hidden + [1]
    return list(zip(widths[:-1], widths[1:]))


def compute_s(shape, batch, tflops, launch_s):
    """Forward and per-layer backward seconds (last layer first) of one rank."""
    fwd, bwd = 0.0, []
    for i, (a, b) in enumerate(shape):
        fwd += 2 * batch * a * b / tflops + 2 * launch_s          # GEMM, bias+ReLU
        gemms = 2 if i > 0 else 1                                  # dW, and dX past the first layer
        bwd.append(gemms * 2 * batch * a * b / tflops + 3 * launch_s)
    return fwd + 3 * launch_s, list(reversed(bwd))               # + the loss and its gradient


def buckets(grad_bytes, bucket):
    """Group per-layer gradients (last layer first) into buckets of >= bucket bytes:
    [(bytes, index of the layer whose backward completes it)]."""
    out, acc = [], 0
    for i, b in enumerate(grad_bytes):
        acc += b
        if acc >= bucket or i == len(grad_bytes) - 1:
            out.append((acc, i))
            acc = 0
    return out


def reductions(fwd, bwd, grad_bytes, n, alpha, beta, bucket=0, per_tensor=1):
    """(start, end) of each reduction and the end of the backward, in seconds
    from the step's start. per_tensor: reductions per layer (2 with weight and
    bias reduced apart, as the engine does without buckets)."""
    t, done = fwd, []
    for b in bwd:
        t += b
        done.append(t)
    spans, comm = [], 0.0
    for nbytes, i in buckets(grad_bytes, bucket):
        k = per_tensor if bucket == 0 else 1
        start = max(comm, done[i])
        comm = start + k * 2 * (n - 1) * alpha * (n > 1) + ring_s(nbytes, n, 0, beta)
        spans.append((start, comm))
    return spans, t


def step(fwd, bwd, grad_bytes, n, alpha, beta, bucket=0, per_tensor=1):
    """Step seconds and exposed communication (the reductions' part after the backward)."""
    spans, bwd_end = reductions(fwd, bwd, grad_bytes, n, alpha, beta, bucket, per_tensor)
    exposed = max([0.0] + [end - bwd_end for _, end in spans])
    return bwd_end + exposed, exposed


def memory_bytes(shape, batch):
    params = sum(a * b + b for a, b in shape) * F32
    acts = batch * sum(b for _, b in shape) * F32 * 2 + batch * shape[0][0] * F32  # pre-activations, outputs, input
    # weights, their gradients, and the reduced gradients (all_reduce_sum writes a new tensor)
    return 3 * params + acts, params


def gib(b):
    return b / 2**30


def gpu_table(args):
    models = [("book MLP 512→2048→512→1", 512, [2048, 512]),
              ("wider MLP 4096→8192→8192→1", 4096, [8192, 8192])]
    print("MODEL, not a measurement: ring all-reduce, per-layer overlap with backward, FP32 GEMMs at "
          f"{args.tflops:g} TFLOP/s + {args.launch_us:g} us per kernel; batch {args.batch} per GPU")
    for name, feats, hidden in models:
        shape = layers(feats, hidden)
        grad_bytes = [(a * b + b) * F32 for a, b in reversed(shape)]
        mem, params = memory_bytes(shape, args.batch)
        print(f"\n{name}: {params / 1e6:.1f} MB of gradients; per-rank memory {gib(mem):.2f} GiB "
              "(weights + gradients + reduced gradients + activations)")
        print(f"{'GPUs':>5} {'fabric':>15} {'step_ms':>9} {'samples/s':>12} {'exposed_ms':>10} {'exposed%':>8} "
              f"{'efficiency':>10} {'batch for 90%':>13} {'best bucket (its step)':>24}")
        fwd1, bwd1 = compute_s(shape, args.batch, args.tflops * 1e12, args.launch_us * 1e-6)
        one, _ = step(fwd1, bwd1, grad_bytes, 1, 0, 1)
        for n in (8, 64, 512):
            fab, alpha, beta = NVLINK if n <= 8 else IB
            t, exp = step(fwd1, bwd1, grad_bytes, n, alpha, beta, per_tensor=2)
            eff = one / t
            # The per-GPU batch from which exposed communication is at most 10% of the step.
            need = None
            for b in (2**k for k in range(4, 20)):
                f, bw = compute_s(shape, b, args.tflops * 1e12, args.launch_us * 1e-6)
                tb, eb = step(f, bw, grad_bytes, n, alpha, beta, per_tensor=2)
                if eb <= 0.1 * tb:
                    need = b
                    break
            best = min((step(fwd1, bwd1, grad_bytes, n, alpha, beta, bucket=c, per_tensor=2)[0], c)
                       for c in [0] + [2**k for k in range(16, 31)])
            print(f"{n:>5} {fab:>15} {t * 1e3:>9.3f} {n * args.batch / t:>12.0f} {exp * 1e3:>10.3f} "
                  f"{100 * exp / t:>7.1f}% {eff:>10.2f} {need if need else '>512Ki':>13} "
                  f"{('per layer' if best[1] == 0 else f'{best[1] / 2**20:g} MiB') + f' ({best[0] * 1e3:.3f} ms)':>24}")
    print("\n'batch for 90%': the per-GPU batch from which exposed communication is at most 10% of the step "
          "(below it, scaling stops paying); 'best bucket': the bucket size with the shortest step "
          "(one reduction per bucket of at least that many bytes, last layer first).")


def here(args):
    bwd = [float(x) * 1e-3 for x in args.backward_ms.split(",")]
    shape = layers(args.features, [int(h) for h in args.hidden.split(",")])
    if len(bwd) != len(shape):
        print(f"scale_model.py: --backward-ms has {len(bwd)} layers, the model {len(shape)}", file=sys.stderr)
        sys.exit(2)
    grad_bytes = [(a * b + b) * F32 for a, b in reversed(shape)]
    a, b = args.alpha_us * 1e-6, args.beta_gbps * 1e9
    t, exp = step(args.forward_ms * 1e-3, bwd, grad_bytes, args.ranks, a, b, per_tensor=2)
    print(f"MODEL of the {args.ranks}-rank CPU step here, from measured alpha {args.alpha_us:g} us, "
          f"beta {args.beta_gbps:g} GB/s and measured compute (forward {args.forward_ms:g} ms, "
          f"backward per layer {args.backward_ms} ms, last layer first):")
    spans, bwd_end = reductions(args.forward_ms * 1e-3, bwd, grad_bytes, args.ranks, a, b, per_tensor=2)
    for (nbytes, _), (start, end), layer in zip(buckets(grad_bytes, 0), spans, range(len(shape), 0, -1)):
        share = max(0.0, end - max(start, bwd_end)) / (end - start) if end > start else 0.0
        print(f"  layer {layer}: {nbytes} gradient bytes, reduction {(end - start) * 1e3:.3f} ms, "
              f"exposed share {share:.2f}")
    print(f"  predicted step {t * 1e3:.2f} ms, exposed communication {exp * 1e3:.3f} ms, "
          f"samples/s {args.batch * args.ranks / t:.0f} (global batch {args.batch * args.ranks})")
    if args.measured_step_ms:
        print(f"  measured step {args.measured_step_ms:g} ms: model/measured {t * 1e3 / args.measured_step_ms:.2f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=1024, help="rows per rank (default 1024)")
    p.add_argument("--tflops", type=float, default=50.0, help="assumed FP32 GEMM TFLOP/s of one GPU")
    p.add_argument("--launch-us", type=float, default=5.0, help="assumed cost of one kernel, us")
    p.add_argument("--alpha-us", type=float, help="measured alpha (bench/mpi_allreduce sizes)")
    p.add_argument("--beta-gbps", type=float, help="measured beta, GB/s")
    p.add_argument("--forward-ms", type=float, help="measured forward+loss of one rank (mpi_allreduce step)")
    p.add_argument("--backward-ms", help="measured backward per layer, last layer first: a,b,c")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--features", type=int, default=512)
    p.add_argument("--hidden", default="2048,512")
    p.add_argument("--measured-step-ms", type=float)
    args = p.parse_args()
    if args.alpha_us is not None:
        if args.beta_gbps is None or args.forward_ms is None or args.backward_ms is None:
            print("scale_model.py: --alpha-us needs --beta-gbps, --forward-ms and --backward-ms", file=sys.stderr)
            sys.exit(2)
        if "--batch" not in sys.argv:
            args.batch = 512  # the book's 1024 rows split across 2 ranks
        here(args)
    else:
        gpu_table(args)


if __name__ == "__main__":
    main()
