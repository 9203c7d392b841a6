#!/usr/bin/python3
"""torch_parity.py — train_mlp against PyTorch: the same MLP, the same initial
weights, the same batches, every batch's loss compared.

  python3 bench/torch_parity.py [--train-mlp build/bin/train_mlp] [--device cpu|cuda]
                                [--batches 50] [--batch-size 64] [--features 32]
                                [--hidden 64,32] [--lr 0.01] [--tol 1e-4]

It builds Dense(H1, relu) -> Dense(H2, relu) -> Dense(1) in PyTorch from a
seed, writes its initial weights as safetensors (train_mlp's names:
dense0.weight, dense0.bias, ...) and a data set as .npy, then runs

  train_mlp --load init.safetensors --data x.npy --targets y.npy --sync batch
            --summary-json s.json --save final.safetensors ...

and PyTorch's own loop on the same batches (Gluon's L2Loss, 0.5 (p - y)^2 per
sample, its mean read; SGD on the batch's mean gradient, which is what
SGD::step(batch_size) does with the summed one). It prints the largest
relative difference of the per-batch losses (the summary's `losses`)
and of the final parameters, loads --save's file back into PyTorch and
compares its loss on the last batch with PyTorch's trained model. Exit 0
when both are within --tol, 1 when not; where PyTorch cannot be imported it
says so in one line and exits 0 (nothing to compare against). On CUDA, TF32
is off on both sides.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_safetensors(path, tensors):
    """tensors: [(name, float32 numpy array)] in order."""
    header, offset, blobs = {}, 0, []
    for name, a in tensors:
        b = a.astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_safetensors(path, np):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", (name, t["dtype"])
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + a:8 + n + b], dtype="<f4").reshape(t["shape"])
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--train-mlp", default=os.path.join(ROOT, "build", "bin", "train_mlp"))
    p.add_argument("--device", default="cpu")
    p.add_argument("--batches", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--features", type=int, default=32)
    p.add_argument("--hidden", default="64,32")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--tol", type=float, default=1e-4)
    a = p.parse_args()
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print(f"torch_parity.py: skipped: {e} (install PyTorch, e.g. apt-get install python3-torch)")
        return 0
    if not os.access(a.train_mlp, os.X_OK):
        print(f"torch_parity.py: error: no train_mlp at {a.train_mlp} (build it, or pass --train-mlp)", file=sys.stderr)
        return 2
    dev = torch.device("cuda" if a.device.startswith("cuda") else "cpu")
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(a.seed)
    widths = [a.features] + [int(w) for w in a.hidden.split(",")] + [1]

    def make_net():
        layers = []
        for i in range(len(widths) - 1):
            layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
            if i < len(widths) - 2:
                layers.append(torch.nn.ReLU())
        return torch.nn.Sequential(*layers)

    net = make_net().to(dev)
    linears = [m for m in net if isinstance(m, torch.nn.Linear)]
    rng = np.random.default_rng(a.seed)
    n = a.batches * a.batch_size
    x = rng.standard_normal((n, a.features)).astype(np.float32)
    w_true = rng.standard_normal(a.features).astype(np.float32) / np.sqrt(a.features)
    y = (np.tanh(x @ w_true) + 0.1 * rng.standard_normal(n)).astype(np.float32)

    with tempfile.TemporaryDirectory() as tmp:
        f = lambda name: os.path.join(tmp, name)
        np.save(f("x.npy"), x)
        np.save(f("y.npy"), y)
        init = []
        for i, m in enumerate(linears):
            init.append((f"dense{i}.weight", m.weight.detach().cpu().numpy()))
            init.append((f"dense{i}.bias", m.bias.detach().cpu().numpy()))
        write_safetensors(f("init.safetensors"), init)
        cmd = [a.train_mlp, "--device", a.device, "--quiet", "--sync", "batch", "--load", f("init.safetensors"),
               "--data", f("x.npy"), "--targets", f("y.npy"), "--batch-size", str(a.batch_size), "--hidden", a.hidden,
               "--lr", repr(a.lr), "--summary-json", f("s.json"), "--save", f("final.safetensors")]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"torch_parity.py: error: train_mlp failed ({run.returncode}): {run.stderr.strip()}", file=sys.stderr)
            return 1
        with open(f("s.json")) as fh:
            read = json.load(fh)[0]["losses"]  # [batch, loss] for each loss the loop read: every batch's in `batch`
        ours = [loss for _, loss in read]
        saved = read_safetensors(f("final.safetensors"), np)

        opt = torch.optim.SGD(net.parameters(), lr=a.lr)
        theirs = []
        for b in range(a.batches):
            xb = torch.from_numpy(x[b * a.batch_size:(b + 1) * a.batch_size]).to(dev)
            yb = torch.from_numpy(y[b * a.batch_size:(b + 1) * a.batch_size]).to(dev)
            loss = (0.5 * (net(xb).squeeze(1) - yb) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            theirs.append(loss.item())

    if len(ours) != len(theirs):
        print(f"torch_parity.py: error: train_mlp logged {len(ours)} losses, PyTorch {len(theirs)}", file=sys.stderr)
        return 1
    rel = [abs(o - t) / max(abs(t), 1e-12) for o, t in zip(ours, theirs)]
    worst = max(rel)
    at = rel.index(worst) + 1
    param_rel = 0.0
    for i, m in enumerate(linears):
        for role, t in (("weight", m.weight), ("bias", m.bias)):
            mine = saved[f"dense{i}.{role}"]
            ref = t.detach().cpu().numpy()
            param_rel = max(param_rel, float(np.linalg.norm(mine - ref) / max(np.linalg.norm(ref), 1e-12)))
    # --save's file in PyTorch: its loss on the last batch against PyTorch's trained model's.
    loaded = make_net()
    lin = [m for m in loaded if isinstance(m, torch.nn.Linear)]
    with torch.no_grad():
        for i, m in enumerate(lin):
            m.weight.copy_(torch.from_numpy(saved[f"dense{i}.weight"].copy()))
            m.bias.copy_(torch.from_numpy(saved[f"dense{i}.bias"].copy()))
        xb = torch.from_numpy(x[-a.batch_size:])
        yb = torch.from_numpy(y[-a.batch_size:])
        l_loaded = (0.5 * (loaded(xb).squeeze(1) - yb) ** 2).mean().item()
        l_trained = (0.5 * (net.cpu()(xb).squeeze(1) - yb) ** 2).mean().item()
    load_rel = abs(l_loaded - l_trained) / max(abs(l_trained), 1e-12)
    print(f"torch_parity.py: {a.device}, {a.batches} batches of {a.batch_size}, MLP {widths}, lr {a.lr}, "
          f"PyTorch {torch.__version__}")
    print(f"  per-batch loss: largest relative difference {worst:.3g} (batch {at}: ours {ours[at - 1]:.7g}, "
          f"PyTorch {theirs[at - 1]:.7g}); first {ours[0]:.6g} / {theirs[0]:.6g}, last {ours[-1]:.6g} / {theirs[-1]:.6g}")
    print(f"  final parameters (--save): largest relative difference {param_rel:.3g} (norm per tensor)")
    print(f"  --save's file loaded in PyTorch: loss on the last batch {l_loaded:.7g}, PyTorch's trained model "
          f"{l_trained:.7g} (relative {load_rel:.3g})")
    ok = worst <= a.tol and param_rel <= a.tol and load_rel <= a.tol
    print(f"  {'within' if ok else 'NOT within'} {a.tol:g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
