#!/usr/bin/env python3
"""table.py — the goals table of gpu_kit.py quick and matrix (the matrix
command's last step prints it, from both folders; `gpu_kit.py table` too).

  python3 bench/gpu/table.py out/gpu/quick [out/gpu/matrix]

The folder holds perf64/ and perf1024/ (each round's train_<mode>_R.json from
train_mlp --summary-json, torch_R.json from torch_mlp.py: eager and graph,
both sync modes; torch_tf32_R.json: the graph with TF32), lt64/ (cuBLASLt's
epilogues on and off at batch 64, train_lt1_R.json and train_lt0_R.json),
gemm_floor.json (bench_cuda_gemm's floor at both batch sizes, FP32 and TF32,
and the SGD update beside a device copy) and op_cost.json (bench_op_cost on
cuda0, with BM_RawLaunch and BM_RawCapture; in the matrix folder when it
ran there), and trace_on.txt / trace_off.txt (tools/trace_summary.py of a
traced run: the step on the GPU's timeline, kernel by kernel).

Per batch size: each mode's median samples/s over the rounds, its ratio to
`batch`, to both PyTorch peers in the same sync mode and to the cuBLAS floor,
the memory increase measured/predicted, the frontend's time per batch and the
step graphs' replay counts. Then the goals, each with its figure and whether
it is met. Medians throughout; every figure comes from the same minutes.
"""
import glob
import json
import os
import re
import statistics
import sys

MiB = 2**20
MODES = ["batch", "none", "none_malloc", "none_run", "bounded", "graph_batch", "graph_none", "batch_lt",
         "graph_none_lt", "graph_none_tf32", "graph_none_tf32_lt"]
SYNC = {"batch": "batch", "none": "none", "none_malloc": "none", "none_run": "none", "bounded": "none",
        "graph_batch": "batch", "graph_none": "none", "batch_lt": "batch", "graph_none_lt": "none",
        "graph_none_tf32": "none", "graph_none_tf32_lt": "none"}
# Modes run beside the others for comparison only (never the FP32 "best"):
# one cudaMalloc per block, cuBLASLt's fused epilogues on, TF32 (its own goals).
COMPARISON = {"none_malloc", "batch_lt", "graph_none_lt", "graph_none_tf32", "graph_none_tf32_lt"}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def runs_of(folder, mode):
    out = []
    for p in sorted(glob.glob(os.path.join(folder, f"train_{mode}_[0-9]*.json"))):
        d = load(p)
        out += d if isinstance(d, list) else ([d] if d else [])
    return [r for r in out if isinstance(r, dict) and r.get("samples_per_s")]


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def floors(top):
    """{(batch, tf32): median us per step}."""
    out = {}
    for b in (load(os.path.join(top, "gemm_floor.json")) or {}).get("benchmarks", []):
        if b.get("aggregate_name") == "median" and "Floor/tf32:" in b["name"]:
            tf32 = b["name"].split("tf32:")[1][0]
            batch = int(b["name"].split("batch:")[1].split("/")[0])
            out[(batch, tf32)] = b["real_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3}.get(b.get("time_unit", "us"), 1.0)
    return out


# bench_cuda_gemm's memory-bound passes, each beside the device copy of as many bytes.
PASSES = (("sgd", "BM_SgdUpdate", "BM_DeviceCopy/of:0", "SGD update"),
          ("bias_relu", "BM_BiasRelu", "BM_DeviceCopy/of:1", "bias + ReLU pass (1024 x 2048)"),
          ("relu_bwd", "BM_ReluBackwardSumRows", "BM_DeviceCopy/of:2", "ReLU backward + bias gradient (1024 x 2048)"))


def bandwidth(top):
    """{key, key + "_copy": median GB/s, and their "_us"} for each of PASSES."""
    out = {}
    for b in (load(os.path.join(top, "gemm_floor.json")) or {}).get("benchmarks", []):
        if b.get("aggregate_name") != "median" or "GBps" not in b:
            continue
        name = (b.get("run_name") or b["name"]).replace("/manual_time", "")
        for key, pass_name, copy_name, _ in PASSES:
            for k, n in ((key, pass_name), (key + "_copy", copy_name)):
                if name == n or (n == "BM_DeviceCopy/of:0" and name == "BM_DeviceCopy"):  # older logs: one copy
                    out[k] = b["GBps"]
                    out[k + "_us"] = b.get("us_per_call")
    return out


def forward_gemms(top):
    """{"gemm0 beta0": us, ...}: the forward's GEMMs alone, not accumulating (beta 0) and accumulating (beta 1)."""
    out = {}
    for b in (load(os.path.join(top, "gemm_floor.json")) or {}).get("benchmarks", []):
        name = (b.get("run_name") or b["name"]).replace("/manual_time", "")
        if b.get("aggregate_name") == "median" and "us_per_call" in b and name.startswith("BM_CudaMlpGemm/gemm:"):
            g, beta = name.split("gemm:")[1].split("/beta:")
            out[f"gemm{g} beta{beta}"] = b["us_per_call"]
    return out


def lt_ab(top):
    """Per round of lt64/, samples/s with cuBLASLt on over off."""
    ratios = []
    for r in range(1, 100):
        a = load(os.path.join(top, "lt64", f"train_lt1_{r}.json"))
        b = load(os.path.join(top, "lt64", f"train_lt0_{r}.json"))
        if a is None and b is None:
            break
        a = a[0] if isinstance(a, list) and a else a
        b = b[0] if isinstance(b, list) and b else b
        if isinstance(a, dict) and isinstance(b, dict) and a.get("samples_per_s") and b.get("samples_per_s"):
            ratios.append(a["samples_per_s"] / b["samples_per_s"])
    return ratios


def op_cost(top):
    """{benchmark name: median microseconds per op (per_op) or per step (per_step)}."""
    out = {}
    for b in (load(os.path.join(top, "op_cost.json")) or {}).get("benchmarks", []):
        per = b.get("per_op", b.get("per_step"))
        if b.get("aggregate_name") == "median" and per is not None:
            name = b.get("run_name") or b["name"].rsplit("_", 1)[0]
            out[name.replace("/manual_time", "")] = per * 1e6
    return out


def fmt(x, spec=".2f", none="-"):
    return format(x, spec) if isinstance(x, (int, float)) else none


def main(top, more=()):
    fl = floors(top)
    goals = []
    best = {}
    for folder in sorted(glob.glob(os.path.join(top, "perf*")), key=lambda f: int(f.rsplit("perf", 1)[1] or 0)):
        batch = int(folder.rsplit("perf", 1)[1])
        peers = [p for f in sorted(glob.glob(os.path.join(folder, "torch_[0-9]*.json"))) for p in (load(f) or [])]
        torch = {(c, m): med([p["samples_per_s"] for p in peers if p.get("capture") == c and p.get("mode") == m])
                 for c in ("eager", "graph") for m in ("batch", "none")}
        peers32 = [p for f in sorted(glob.glob(os.path.join(folder, "torch_tf32_[0-9]*.json"))) for p in (load(f) or [])]
        torch32 = max([med([p["samples_per_s"] for p in peers32 if p.get("capture") == "graph" and p.get("mode") == m]) or 0
                       for m in ("batch", "none")] or [0])
        floor = fl.get((batch, "0"))
        floor_sps = batch * 1e6 / floor if floor else None
        ours = {}
        print(f"\nbatch {batch}" + (f" (cuBLAS floor {floor:.1f} us/step FP32 = {floor_sps:,.0f} samples/s"
                                    + (f", {fl[(batch, '1')]:.1f} us TF32" if (batch, "1") in fl else "") + ")"
                                    if floor else ""))
        hdr = (f"{'mode':12} {'samples/s':>10} {'x batch':>7} {'x eager':>7} {'x graph':>7} {'x floor':>7} "
               f"{'+MiB':>8} {'meas/pred':>9} {'h ms':>6} {'d ms':>6} {'mallocs':>7} {'ops/b':>5} {'graph cap/upd/rep/eager':>24} {'loss':>10}")
        print(hdr)
        print("-" * len(hdr))
        for mode in MODES:
            rs = runs_of(folder, mode)
            if not rs:
                continue
            sps = med([r["samples_per_s"] for r in rs])
            ours[mode] = sps
            inc = med([r.get("mem_increase_bytes") for r in rs])
            pred = med([r.get("predicted_increase_bytes") for r in rs])
            h = med([r.get("host_s_per_batch") for r in rs])
            calls = med([r.get("device_allocs") for r in rs])
            d = med([r.get("device_s_per_batch") for r in rs])
            opb = med([r.get("ops_per_batch") for r in rs])
            g = rs[-1].get("graph") or {}
            graph = f"{g.get('captured', 0)}/{g.get('updated', 0)}/{g.get('replayed', 0)}/{g.get('eager', 0)}" if g else "-"
            sync = SYNC[mode]
            print(f"{mode:12} {sps:10,.0f} {fmt(sps / ours['batch'] if 'batch' in ours else None):>7} "
                  f"{fmt(sps / torch[('eager', sync)] if torch[('eager', sync)] else None):>7} "
                  f"{fmt(sps / torch[('graph', sync)] if torch[('graph', sync)] else None):>7} "
                  f"{fmt(sps / floor_sps if floor_sps else None):>7} {fmt(inc / MiB if inc is not None else None, '.1f'):>8} "
                  f"{fmt(inc / pred if inc is not None and pred else None):>9} {fmt(h * 1e3 if h else None):>6} "
                  f"{fmt(d * 1e3 if d else None):>6} {fmt(calls, '.0f'):>7} {fmt(opb, '.1f'):>5} {graph:>24} {fmt(rs[-1].get('final_loss'), '.6g'):>10}")
            if mode == "none" and opb is not None and batch == 1024:
                # ops_per_batch in none counts the batch's data draw (randn, ones) and, on a
                # GPU, its two timer marks (event records, no kernel) beside the step's ops.
                step = opb - 4
                goals.append(("launches per d2l step (none: ops per batch - data, timers)", step, "<= 10", step <= 10, "n"))
            if mode.startswith("graph") and g:
                steady = g.get("steps", 0) - g.get("captured", 0)
                share = g.get("replayed", 0) / steady if steady > 0 else 0.0
                goals.append((f"batch {batch} {mode}: steady steps replayed", share, ">= 0.95", share >= 0.95, "%"))
            if mode == "none" and calls is not None and batch == 1024:
                goals.append((f"batch 1024 none: device allocator calls in {rs[-1].get('batches', '?')} batches",
                              calls, "<= 20", calls <= 20, "n"))
            if mode == "none" and "batch" in ours:
                hb = med([r.get("host_s_per_batch") for r in runs_of(folder, "batch")])
                if batch == 1024 and h and hb:
                    goals.append(("batch 1024: frontend time per batch, none / batch", h / hb, "<= 1.5", h / hb <= 1.5, "x"))
        for c in ("eager", "graph"):
            for m in ("batch", "none"):
                if torch[(c, m)]:
                    print(f"{'torch-' + c + ' ' + m:22} {torch[(c, m)]:10,.0f} "
                          f"{fmt(torch[(c, m)] / floor_sps if floor_sps else None):>31}")
        if "batch" in ours and "none" in ours:
            r = ours["none"] / ours["batch"]
            goals.append((f"batch {batch}: none / batch", r, ">= 1.0", r >= 1.0, "x"))
        tg = max([v for (c, _), v in torch.items() if c == "graph" and v] or [0])
        best_modes = {m: v for m, v in ours.items() if m not in COMPARISON}
        # The fused epilogues are off by default while this stays below 1.
        for fused, plain in (("batch_lt", "batch"), ("graph_none_lt", "graph_none"),
                             ("graph_none_tf32_lt", "graph_none_tf32")):
            if fused in ours and plain in ours:
                r = ours[fused] / ours[plain]
                goals.append((f"batch {batch}: cuBLASLt epilogues on / off, {plain}", r, "< 1: off", r < 1.0, "x"))
        if torch32:
            print(f"{'torch-graph tf32 best':22} {torch32:10,.0f}")
        tf32_floor = fl.get((batch, "1"))
        if "graph_none_tf32" in ours:
            if tf32_floor and batch == 1024:
                r = (batch * 1e6 / tf32_floor) / ours["graph_none_tf32"]
                goals.append(("batch 1024: TF32 step / TF32 GEMM floor (graph none)", r, "<= 1.15", r <= 1.15, "x"))
            if torch32:
                r = ours["graph_none_tf32"] / torch32
                goals.append((f"batch {batch}: ours TF32 / PyTorch TF32 whole-step graph best", r, ">= 1.2", r >= 1.2, "x"))
        if best_modes and tg:
            b = max(best_modes.values())
            want = 1.2 if batch >= 1024 else 1.3
            goals.append((f"batch {batch}: ours best / PyTorch whole-step graph best", b / tg, f">= {want}", b / tg >= want, "x"))
            gb = max([ours.get("graph_batch", 0), ours.get("graph_none", 0)])
            if gb and batch < 1024:
                goals.append((f"batch {batch}: ours --graph on / PyTorch graph", gb / tg, ">= 1.0", gb / tg >= 1.0, "x"))
        if best_modes and floor_sps and batch == 1024:
            r = floor_sps / max(best_modes.values())
            goals.append(("batch 1024: step / FP32 GEMM floor, best mode", r, "<= 1.08", r <= 1.08, "x"))
        best[batch] = ours
    ab = lt_ab(top)
    if ab:
        print(f"\ncuBLASLt epilogues on / off at batch 64, --graph on --sync none, {len(ab)} alternated rounds: "
              + " ".join(f"{x:.3f}" for x in ab) + f" (median {med(ab):.3f}, spread {min(ab):.3f}-{max(ab):.3f})")
        decided = min(ab) > 1.0 or max(ab) < 1.0
        goals.append(("batch 64: cuBLASLt on / off, median of the A/B rounds", med(ab),
                      "clear of 1", decided, "x"))
    bw = bandwidth(top)
    for key, _, _, what in PASSES:
        if bw.get(key) and bw.get(key + "_copy"):
            print(f"{'' if key != 'sgd' else chr(10)}{what} {bw[key]:.0f} GB/s ({fmt(bw.get(key + '_us'))} us), device copy "
                  f"of as many bytes {bw[key + '_copy']:.0f} GB/s ({fmt(bw.get(key + '_copy_us'))} us)")
            r = bw[key] / bw[key + "_copy"]
            goals.append((f"{what.split(' (')[0]} / device copy bandwidth", r, ">= 0.8", r >= 0.8, "x"))
    fw = forward_gemms(top)
    if fw:
        print("\nthe forward's GEMMs at 1024, FP32 (us): " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(fw.items())))
    for g in ("on", "off"):  # the step kernel by kernel (tools/trace_summary.py on the device track)
        try:
            with open(os.path.join(top, f"trace_{g}.txt"), encoding="utf-8") as f:
                text = f.read()
        except OSError:
            continue
        m = re.search(r"per batch: GPU busy ([\d.]+) us, outside the GEMM ops ([\d.]+) us, idle between ops ([\d.]+) us",
                      text)
        if m:
            busy, outside, idle = (float(v) for v in m.groups())
            print(f"\nthe step on the GPU's timeline (trace, --graph {g}, per batch): busy {busy:.1f} us, outside the "
                  f"GEMM ops {outside:.1f} us, idle between ops {idle:.1f} us (trace_{g}.txt: kernel by kernel)")
            if g == "on":
                goals.append(("non-GEMM us per step (trace, --graph on)", outside, "<= 37", outside <= 37, "n"))
                goals.append(("idle us per step (trace, --graph on)", idle, "<= 15", idle <= 15, "n"))
    oc = op_cost(next((t for t in (top, *more) if os.path.exists(os.path.join(t, "op_cost.json"))), top))
    if oc:
        print("\nper op, per step for *Step and *Capture (us): " + ", ".join(f"{k[3:]} {v:.2f}" for k, v in sorted(oc.items())))
    # n = 256 ops stay below the GPU's launch queue (the host's cost per op); 2048 fill it.
    for n in ("256", "2048"):
        worker, raw = oc.get(f"BM_OpWorker/cuda0/{n}"), oc.get(f"BM_RawLaunch/cuda0/{n}")
        if worker and raw:
            goals.append((f"worker per op / raw launch, {n} ops", worker / raw, "<= 1.2", worker / raw <= 1.2, "x"))
    # A step recorded again each step (stream capture + update + launch), against the same kernels captured bare.
    for n in ("12", "24"):
        rec, raw = oc.get(f"BM_RecordedStep/cuda0/{n}"), oc.get(f"BM_RawCapture/cuda0/{n}")
        if rec and raw:
            goals.append((f"worker per recorded step / raw capture, {n} ops", rec / raw, "<= 2.0", rec / raw <= 2.0, "x"))
    print("\ngoals")
    for name, value, want, met, unit in goals:
        v = f"{value * 100:.1f}%" if unit == "%" else f"{value:.0f}" if unit == "n" else f"{value:.2f}x"
        print(f"  {name:58} {v:>8}  goal {want:8} {'met' if met else 'NOT met'}")
    print("\nsamples/s: medians over the alternated rounds; x eager / x graph: over PyTorch in the same sync mode;")
    print("x floor: over the eight cuBLAS GEMMs alone (FP32); +MiB: the tracked increase (meas/pred: over the model);")
    print("h, d: the frontend's and the device's time per batch; mallocs: calls to the device's allocator in the run;")
    print("graph: captured/updated/replayed/eager steps; ops/b: ops queued per batch, data and timers included;")
    print("the candidates (cuBLASLt's epilogues, ASYNCMLP_CANDIDATES) against the default: the matrix command's table.")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: table.py QUICK_LOG_FOLDER [MATRIX_LOG_FOLDER]", file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2:])
