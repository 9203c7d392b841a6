#!/usr/bin/env python3
"""torch_mlp.py — the d2l MLP in PyTorch: the peers train_mlp is timed against.

Same model, data and optimizer semantics as train_mlp (models/mlp.h,
train/runs/experiment.cpp):
  Dense(2048, relu) -> Dense(512, relu) -> Dense(1), 512 input features,
  W ~ U(-0.07, 0.07), b = 0 (MXNet's default initialiser);
  per batch X ~ N(0, 1) (1024 x 512) and y = ones(1024), drawn on the GPU;
  L2Loss: 0.5 * (yhat - y)^2 per sample; backward with a head of ones
  (the same as loss.sum().backward()); SGD: w -= lr * grad / batch, lr 0.005.
Sync modes: --sync batch reads the loss every batch (loss.mean().item(), a
blocking copy, as train_mlp's run 1); --sync none never does and calls
torch.cuda.synchronize() at the end; --sync every=K reads every K batches.

Two peers (--capture): eager (each op launched from Python) and graph: the
whole step — forward, backward and optimizer.step() — captured once as a
CUDA graph with torch.cuda.graph on static tensors (X refilled by normal_()
inside the graph), then g.replay() per batch: the whole-network capture of
PyTorch's CUDA Graphs documentation. --capture eager,graph runs both in one
process, one after the other, each with its warm-up.

Warm-up batches run first (cuBLAS/caching-allocator set-up), then --repeats
timed runs of --batches each. Prints one JSON object per (capture, sync) on stdout, as a list:
steps_per_s and wall_s (medians, plus every repeat), and the memory increase
torch.cuda.max_memory_allocated() - memory_allocated() at the start of a run
(the median, plus every repeat) — the peer of train_mlp's mem_increase_bytes.

  python3 bench/gpu/torch_mlp.py --sync batch,none --capture eager,graph --json out/torch.json
"""
import argparse
import json
import statistics
import sys
import time

import torch


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sync", default="batch", help="batch | none | every=K, or a comma list (default: batch)")
    p.add_argument("--capture", default="eager", help="eager | graph, or a comma list (default: eager)")
    p.add_argument("--batches", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--features", type=int, default=512)
    p.add_argument("--hidden", default="2048,512")
    p.add_argument("--lr", type=float, default=0.005)
    p.add_argument("--warmup", type=int, default=20, help="untimed batches first (default: 20)")
    p.add_argument("--repeats", type=int, default=5, help="timed runs; medians are reported (default: 5)")
    p.add_argument("--update", choices=["optim", "foreach", "loop"], default="optim",
                   help="optim: torch.optim.SGD(lr=lr/batch) (foreach kernels); foreach: "
                        "torch._foreach_add_(w, g, alpha=-lr/batch); loop: w -= lr * g / batch per tensor")
    p.add_argument("--tf32", action="store_true", help="TF32 matmuls (default: off, as train_mlp)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", default="", help="also write the JSON object to this file")
    a = p.parse_args()
    a.syncs = []
    for mode in a.sync.split(","):
        if mode == "batch":
            a.syncs.append((mode, 1))
        elif mode == "none":
            a.syncs.append((mode, 0))
        elif mode.startswith("every=") and mode[len("every="):].isdigit() and int(mode[len("every="):]) > 0:
            a.syncs.append((mode, int(mode[len("every="):])))
        else:
            p.error(f"--sync must be batch, none or every=K (K > 0), not {mode!r}")
    a.captures = a.capture.split(",")
    for c in a.captures:
        if c not in ("eager", "graph"):
            p.error(f"--capture must be eager or graph, not {c!r}")
    if "graph" in a.captures and a.update != "optim":
        p.error("--capture graph captures optimizer.step(): use --update optim")
    if a.batches <= 0 or a.batch_size <= 0 or a.repeats <= 0 or a.warmup < 0:
        p.error("--batches, --batch-size and --repeats must be positive, --warmup >= 0")
    return a


def build(features, hidden, device):
    layers, width = [], features
    for h in hidden:
        layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
        width = h
    layers.append(torch.nn.Linear(width, 1))
    net = torch.nn.Sequential(*layers).to(device)
    with torch.no_grad():
        for m in net:
            if isinstance(m, torch.nn.Linear):
                m.weight.uniform_(-0.07, 0.07)
                m.bias.zero_()
    return net


def make_step(net, args, device):
    params = list(net.parameters())
    B, F, lr = args.batch_size, args.features, args.lr
    opt = torch.optim.SGD(params, lr=lr / B) if args.update == "optim" else None

    def step():
        X = torch.randn(B, F, device=device)
        y = torch.ones(B, device=device)
        yhat = net(X)                                          # (B, 1)
        loss = 0.5 * (yhat - y.reshape(B, 1)).square().mean(dim=1)  # (B): L2Loss
        loss.backward(torch.ones_like(loss))                   # head of ones
        with torch.no_grad():
            if opt is not None:
                opt.step()
            elif args.update == "foreach":
                torch._foreach_add_(params, [p.grad for p in params], alpha=-lr / B)
            else:
                for p in params:
                    p -= lr * p.grad / B
        for p in params:  # grad_req='write': the next backward writes fresh gradients
            p.grad = None
        return loss

    return step


def make_graph_step(net, args, device):
    """The whole step captured once; each call replays it (static X refilled inside)."""
    params = list(net.parameters())
    B, F = args.batch_size, args.features
    opt = torch.optim.SGD(params, lr=args.lr / B)
    static_X = torch.empty(B, F, device=device)
    static_y = torch.ones(B, 1, device=device)

    def body():
        static_X.normal_()
        yhat = net(static_X)
        loss = 0.5 * (yhat - static_y).square().mean(dim=1)
        loss.backward(torch.ones_like(loss))
        opt.step()
        return loss

    side = torch.cuda.Stream()  # warm-up on a side stream before capture, as the documentation does
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = body()

    def step():
        graph.replay()
        return static_loss

    return step


def run(step, args):
    """One timed run: (wall seconds, memory increase in bytes, last loss read or None)."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start_bytes = torch.cuda.memory_allocated()
    last = None
    t0 = time.perf_counter()
    for b in range(1, args.batches + 1):
        loss = step()
        if args.every and b % args.every == 0:
            last = loss.mean().item()
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    return wall, torch.cuda.max_memory_allocated() - start_bytes, last


def measure(step, args, capture, mode):
    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    walls, increases, losses = [], [], []
    for r in range(args.repeats):
        wall, inc, last = run(step, args)
        walls.append(wall)
        increases.append(inc)
        losses.append(last)
        print(f"torch {capture} {mode} repeat {r + 1}: {wall:.4f} s, {args.batches / wall:.1f} steps/s, "
              f"increased memory {inc / 2**20:.1f} MiB", file=sys.stderr)
    wall = statistics.median(walls)
    return {
        "framework": "pytorch-" + capture,
        "capture": capture,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
        "mode": mode,
        "batches": args.batches,
        "batch_size": args.batch_size,
        "update": args.update,
        "tf32": args.tf32,
        "warmup_batches": args.warmup,
        "repeats": args.repeats,
        "wall_s": wall,
        "steps_per_s": args.batches / wall,
        "samples_per_s": args.batches * args.batch_size / wall,
        "mem_increase_bytes": int(statistics.median(increases)),
        "wall_s_all": walls,
        "mem_increase_bytes_all": increases,
        "final_loss": losses[-1],
    }


def main():
    args = parse_args()
    if not torch.cuda.is_available():
        print("torch_mlp.py: no CUDA GPU visible to PyTorch", file=sys.stderr)
        return 2
    device = torch.device("cuda:0")
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    hidden = [int(h) for h in args.hidden.split(",") if h]
    results = []
    for capture in args.captures:
        for mode, every in args.syncs:
            torch.manual_seed(args.seed)
            net = build(args.features, hidden, device)
            args.every = every
            step = make_graph_step(net, args, device) if capture == "graph" else make_step(net, args, device)
            results.append(measure(step, args, capture, mode))
            del step, net
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
