#!/usr/bin/python3
"""The d2l chapter "Asynchronous Computation", section by section, in Python
over asyncmlp: each section's code in the book's shape, the book's lines, then
what our models predict beside what was measured. Python is the frontend
here, as in MXNet and PyTorch: its own time per call is t1 and, in the
training loop, h; nothing is simulated.

  PYTHONPATH=build/python /usr/bin/python3 examples/chapter.py --device cpu
  ... --sections sync-vs-async --ops 1000 --reps 5 --json > out.json

Sections (all by default, in the book's order):
  asynchrony     10 x (normal 1000x1000, dot): NumPy, then asyncmlp queued and
                 finished; z = x * y + 2
  blockers       one dot, then each blocker: waitall, wait_to_read, asnumpy,
                 item, print; each against the work it waited for plus t3
  sync-vs-async  y = x + 1, N times, a barrier each op vs one at the end;
                 t1, t2, t3 measured alone, then N(t1+t2+t3) and
                 N max(t1,t2) + min(t1,t2) + t3 against both loops
  training       the book's MLP trained with the loss read each batch and
                 without under `enqueue`, then without under `stream` (the
                 module's default): time per epoch, memory (tracked bytes and
                 RSS, as the book's `ps`), the memory model (enqueue: a
                 batch's bytes per batch queued; stream: one batch's) and the
                 throughput model fed by the loop's own h, d
  exercises      the chapter's exercises, answered by measurement:
                 1. why t1 + N t2 + t3 needs N t2 > (N-1) t1: the one-barrier
                    loop with a cheap op (x of 1x2) and an expensive one
                    (x of --size squared) against N t1 + t2 + t3 and t1 + N t2 + t3
                 2. waitall against wait_to_read with independent work queued:
                    dots on the device, a small op on another (its own queue)
                 3. (PyTorch tab) asynchrony on the CPU: the section's
                    randn/mm loop through asyncmlp.torch, queued and finished,
                    and with every push waiting (PyTorch's eager CPU ops)

Exit status: 0 when every section ran; 2 for a bad option or --markdown
input (one line); 1 for a failed run or standard output that took no
write (closed, its reader gone, a full disk, past ulimit -f; one line).
"""
import argparse
import contextlib
import json
import math
import os
import statistics
import sys
import time

import numpy as np

import asyncmlp as am

SECTIONS = ["asynchrony", "blockers", "sync-vs-async", "training", "exercises"]
MARKDOWN_INPUT_LIMIT = 16 << 20  # --json's figures are a few KiB


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse's usage block is not an error message)
        sys.stderr.write(f"{self.prog}: {message} (try --help)\n")
        sys.exit(2)


def human_s(s):
    """Seconds with a unit a reader takes in at a glance."""
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.2f} µs"


def mb(b):
    return f"{b / 1e6:.1f} MB"


def heading(name, what):
    print(f"\n== {name}: {what} ==", flush=True)


class Benchmark:
    """d2l.Benchmark: `with Benchmark('numpy'):` prints 'numpy: 1.0123 sec'."""

    def __init__(self, description="Done"):
        self.description = description

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start
        print(f"{self.description}: {self.seconds:.4f} sec")


def busy(dev):
    """The device's own seconds so far as the host can read them: the CPU
    worker's busy time (the kernels run on it)."""
    return am.queue_stats(dev)["busy_s"]


class DeviceClock:
    """The device's time over a stretch of queued work: the worker's busy
    seconds on a CPU, the GPU's own (two timeline marks) on CUDA, where the
    worker only launches."""

    def __init__(self, dev):
        self.dev = dev

    def start(self):
        if self.dev.is_cuda:
            self.mark = am.DeviceTimer.mark(self.dev)
        else:
            self.b0 = busy(self.dev)

    def stop(self):
        """Seconds of device time since start(); waits for the device on CUDA."""
        if self.dev.is_cuda:
            return am.DeviceTimer.mark(self.dev).seconds_since(self.mark)
        am.waitall()
        return busy(self.dev) - self.b0


def ratio(measured, predicted):
    return measured / predicted if predicted > 0 else float("nan")


# ---------------------------------------------------------------------------
# asynchrony: the book's first benchmark
def section_asynchrony(dev, args, out):
    n = args.size
    heading("asynchrony", f"10 x (normal {n}x{n}, dot): NumPy, then asyncmlp on {dev}")
    # Warm-up for the device's computation (the book's first lines)
    a = am.normal(shape=(n, n), device=dev)
    b = am.dot(a, a)
    b.wait_to_read()

    with Benchmark("numpy") as t_np:
        for _ in range(10):
            a_np = np.random.normal(size=(n, n))
            b_np = np.dot(a_np, a_np)

    clock = DeviceClock(dev)
    am.waitall()
    clock.start()
    with Benchmark("asyncmlp") as t_queue:
        for _ in range(10):
            a = am.normal(shape=(n, n), device=dev)
            b = am.dot(a, a)
    with Benchmark() as t_done:
        for _ in range(10):
            a = am.normal(shape=(n, n), device=dev)
            b = am.dot(a, a)
        am.waitall()
    d20 = clock.stop()  # the device's time for both loops' 20 iterations
    d = d20 / 20
    # The second loop also waits for what the first queued and the device had
    # not yet run: all 20 iterations' device time less what it ran while the
    # first loop was queuing.
    done_model = max(10 * d, 20 * d - t_queue.seconds)
    print(f"  the loop returned after {human_s(t_queue.seconds)}: 20 calls queued, none waited for")
    print(f"  'Done' waited for both loops' work: the device's {human_s(d)} per iteration x 20, less the "
          f"{human_s(t_queue.seconds)} it ran during the first loop = {human_s(done_model)} "
          f"(measured / predicted = {ratio(t_done.seconds, done_model):.3f})")
    print(f"  NumPy (float64, on this thread) {t_np.seconds / t_done.seconds:.2f}x asyncmlp's finished time")

    x = am.ones((1, 2), device=dev)
    y = am.ones((1, 2), device=dev)
    z = x * y + 2
    print(z)
    out["asynchrony"] = {"n": n, "numpy_s": t_np.seconds, "queued_s": t_queue.seconds, "done_s": t_done.seconds,
                         "device_s_per_iteration": d, "done_model_s": done_model, "z": z.asnumpy().tolist()}


# ---------------------------------------------------------------------------
# y = x + 1: t1, t2, t3 and the two loops (also t3 for the blockers)
def measure_t12(dev, x, n):
    """t1: n pushes onto a paused queue, per push (the frontend alone: Python's
    call and the push); t2: that backlog drained, per op (the backend alone)."""
    with am.paused(dev):
        t0 = time.perf_counter()
        for _ in range(n):
            y = x + 1
        t1 = (time.perf_counter() - t0) / n
        released = time.perf_counter()
    am.waitall()
    t2 = (time.perf_counter() - released) / n
    return t1, t2


def synced_loop(x, n):
    t0 = time.perf_counter()
    for _ in range(n):
        y = x + 1
        y.wait_to_read()
    return time.perf_counter() - t0


def async_loop(dev, x, n):
    """Returns the loop's time to its waitall() and the pushes' (the loop
    without the wait), and how many pushes found the worker asleep and woke it."""
    w0 = am.queue_stats(dev)["wakes"]
    t0 = time.perf_counter()
    for _ in range(n):
        y = x + 1
    pushed = time.perf_counter() - t0
    am.waitall()
    return time.perf_counter() - t0, pushed, am.queue_stats(dev)["wakes"] - w0


CALIBRATION_OPS = 500  # one barrier's fixed cost is calibrated on a synced run of this many ops


def round_trip(x):
    """A short synced run's time per op: push, run and one barrier. Less t1
    and t2 it is t3, one barrier's fixed cost. Thread wake-ups dominate it and
    on a VM they drift over seconds, so each repeat calibrates again around
    the runs it models."""
    return synced_loop(x, CALIBRATION_OPS) / CALIBRATION_OPS


def barrier_cost(dev):
    """t3, one barrier's fixed cost on dev: a short synced run's time per op
    less t1 and t2 measured alone."""
    x = am.ones((1, 2), device=dev)
    am.waitall()
    t1, t2 = measure_t12(dev, x, 200)
    return max(0.0, round_trip(x) - t1 - t2)


def section_sync_vs_async(dev, args, out):
    n, reps = args.ops, args.reps
    heading("sync-vs-async", f"y = x + 1, {n} times, on {dev}")
    x = am.ones((1, 2), device=dev)  # the book's x
    x.wait_to_read()
    measure_t12(dev, x, n)  # warm-up: the pool caches n buffers
    synced_loop(x, min(n, 1000))
    async_loop(dev, x, min(n, 1000))
    v1, v2, v3, synced, asynced, pushed, wakes = [], [], [], [], [], [], []
    for _ in range(reps):
        t1, t2 = measure_t12(dev, x, n)
        rt_before = round_trip(x)
        synced.append(synced_loop(x, n))
        a, p, w = async_loop(dev, x, n)
        asynced.append(a)
        pushed.append(p / n)
        wakes.append(w)
        rt = 0.5 * (rt_before + round_trip(x))
        v1.append(t1)
        v2.append(t2)
        v3.append(max(0.0, rt - t1 - t2))
    # the book's lines
    ms, ma = statistics.median(synced), statistics.median(asynced)
    print(f"synchronous: {ms:.4f} sec")
    print(f"asynchronous: {ma:.4f} sec")
    t1, t2, t3 = statistics.median(v1), statistics.median(v2), statistics.median(v3)
    t1_loop, woke = statistics.median(pushed), statistics.median(wakes)

    def one_barrier(t1):  # the slower side counts N times, the other once
        return n * max(t1, t2) + min(t1, t2) + t3

    model_s, model_a, model_book = n * (t1 + t2 + t3), one_barrier(t1_loop), one_barrier(t1)
    print(f"  t1 frontend (Python's call and the push), per op  {human_s(t1)}   alone (onto a paused queue);")
    print(f"                                                    {human_s(t1_loop)}   beside the running worker "
          f"(the one-barrier loop's pushes)")
    print(f"  t2 backend execution, per op                      {human_s(t2)}   (a backlog drained)")
    print(f"  t3 one barrier's fixed cost                       {human_s(t3)}   "
          f"(a {CALIBRATION_OPS}-op synced run less t1 and t2)")
    book = "N t1 + t2 + t3" if max(t1, t1_loop) > t2 else "t1 + N t2 + t3"
    print(f"  medians of {reps}:                             measured       model    measured / model")
    print(f"  barrier each op  N (t1 + t2 + t3)           {human_s(ms):>11} {human_s(model_s):>11}    "
          f"{ms / model_s:.3f}")
    print(f"  one barrier      {book + ', t1 beside':<27}{human_s(ma):>11} {human_s(model_a):>11}    "
          f"{ma / model_a:.3f}")
    print(f"  one barrier      {book + ', t1 alone':<27}{human_s(ma):>11} {human_s(model_book):>11}    "
          f"{ma / model_book:.3f}")
    print(f"  one barrier at the end is {ms / ma:.1f}x faster than one per op")
    lines = []
    if t1 > t2:
        lines.append(f"Python's call ({human_s(t1)}) is slower than the op ({human_s(t2)}): the frontend is the "
                     "bottleneck (the book assumes t2 >= t1), so N t1 counts.")
    if t1_loop > 1.1 * t1:
        lines.append(f"Beside the running worker a push costs {t1_loop / t1:.1f}x what it costs alone: "
                     f"{woke:.0f} of {n} pushes found the worker asleep (it had caught up) and woke it, and the "
                     "two threads share the queue's lock and the pool's cache lines. The model fed with t1 "
                     "measured beside the worker holds; with t1 alone it reads low.")
    for line in lines:
        print("   > " + line)
    out["sync_vs_async"] = {"ops": n, "reps": reps, "t1_s": t1, "t1_beside_worker_s": t1_loop, "t2_s": t2,
                            "t3_s": t3, "wakes": woke, "synced_s": ms, "async_s": ma, "model_synced_s": model_s,
                            "model_async_s": model_a, "model_async_t1_alone_s": model_book}
    return t1, t2, t3


# ---------------------------------------------------------------------------
# blockers: each way of waiting, after one queued dot
def section_blockers(dev, args, out):
    n, reps = args.size, args.reps
    heading("blockers", f"b = dot(a, a) ({n}x{n}) queued, then each blocker, on {dev}")
    a = am.normal(shape=(n, n), device=dev)
    t3 = barrier_cost(dev)

    def blockers():
        yield "waitall", lambda b: am.waitall()
        yield "wait_to_read", lambda b: b.wait_to_read()
        yield "numpy conversion", lambda b: b.asnumpy()
        yield "scalar conversion", lambda b: b.sum().item()
        yield "print", lambda b: repr(b)  # what print() shows, without the screenful

    clock = DeviceClock(dev)
    rows = []
    for name, block in blockers():
        measured, device_s = [], []
        for r in range(reps + 1):  # the first is a warm-up
            am.waitall()
            clock.start()
            t0 = time.perf_counter()
            b = am.dot(a, a)
            block(b)
            s = time.perf_counter() - t0
            dt = clock.stop()
            if r:
                measured.append(s)
                device_s.append(dt)
        m, d = statistics.median(measured), statistics.median(device_s)
        print(f"{name}: {m:.4f} sec")
        rows.append({"blocker": name, "measured_s": m, "device_s": d, "predicted_s": d + t3})
    print(f"  medians of {reps}: each blocker waited for the device's work (d: the dot, and for item the sum)")
    print(f"  plus one barrier's fixed cost t3 = {human_s(t3)}:")
    print("  blocker              measured   d + t3     measured / predicted   (the rest: copying out, printing)")
    for row in rows:
        print(f"  {row['blocker']:<18} {human_s(row['measured_s']):>11} {human_s(row['predicted_s']):>11}"
              f"     {ratio(row['measured_s'], row['predicted_s']):.3f}")
    out["blockers"] = {"n": n, "reps": reps, "t3_s": t3, "rows": rows}


# ---------------------------------------------------------------------------
# training: the book's MLP, the loss read each batch and not
def data_iter(dev, num_batches, batch_size, features, every):
    """The book's data_iter: random batches, and a line every `every` batches."""
    start = time.perf_counter()
    for i in range(num_batches):
        X = am.normal(shape=(batch_size, features), device=dev)
        y = am.ones((batch_size,), device=dev)
        yield X, y
        if (i + 1) % every == 0:
            print(f"batch {i + 1}, time {time.perf_counter() - start:.4f} sec")
            start = time.perf_counter()


def get_mem():
    """The process's resident memory in MB (the book reads it with `ps u`)."""
    return am.process_rss_bytes() / 1e6


def train_epoch(dev, net, loss, trainer, args, read_loss):
    """One pass of the book's loop. Returns what it measured: the loop's own
    time per batch (h: Python's, less any wait for the loss), the device's
    time per batch (d: the CPU worker's busy time; on CUDA the GPU's time
    between marks at each batch's start and end), the wall time, the bytes
    each batch allocated, the most batches queued at a batch's end, and the
    memory grown."""
    am.waitall()
    am.reset_peaks(dev)
    mem0, rss0 = am.memory_stats(dev), get_mem()
    q0 = am.queue_stats(dev)
    marks = []  # CUDA: (start, end) of each batch on the GPU's timeline
    waited = 0.0
    most_queued_ops = 0
    nb, bs = args.batches, args.batch_size
    every = max(1, nb // 3)
    losses = []
    in_use = []  # tracked bytes in use at each batch's end, less the start's (the notebook's plot)
    t0 = time.perf_counter()
    for X, y in data_iter(dev, nb, bs, args.features, every):
        m0 = am.DeviceTimer.mark(dev) if dev.is_cuda else None
        l = loss(net(X), y)
        l.backward()
        trainer.step(bs)
        trainer.zero_grad()
        if m0 is not None:
            marks.append((m0, am.DeviceTimer.mark(dev)))
        if read_loss:  # the barrier before a new batch: read the loss
            w0 = time.perf_counter()
            losses.append(l.mean().item())
            waited += time.perf_counter() - w0
        else:
            q = am.queue_stats(dev)
            most_queued_ops = max(most_queued_ops, q["pushed"] - q["completed"])
        in_use.append(am.memory_stats(dev)["bytes_in_use"] - mem0["bytes_in_use"])
    loop_s = time.perf_counter() - t0
    mem_loop, q_loop = am.memory_stats(dev), am.queue_stats(dev)  # the batches' own ops and bytes
    if not read_loss:
        losses.append(l.mean().item())  # the last loss
    am.waitall()
    wall = time.perf_counter() - t0
    mem1, q1 = am.memory_stats(dev), am.queue_stats(dev)
    rss1 = get_mem()
    if dev.is_cuda:
        d_total = sum(end.seconds_since(start) for start, end in marks)
    else:
        d_total = q1["busy_s"] - q0["busy_s"]
    ops = q_loop["pushed"] - q0["pushed"] - 2 * len(marks)
    return {"mode": "batch" if read_loss else "none", "batches": nb, "wall_s": wall, "loop_s": loop_s,
            "h_s": (loop_s - waited) / nb, "d_s": d_total / nb, "samples_per_s": nb * bs / wall,
            "ops_per_batch": ops / nb,
            "bytes_per_batch": (mem_loop["bytes_allocated_total"] - mem0["bytes_allocated_total"]) / nb,
            "most_queued_ops": most_queued_ops, "tracked_growth_bytes": mem1["peak_bytes"] - mem0["bytes_in_use"],
            "rss_growth_mb": rss1 - rss0, "fresh_bytes": mem1["fresh_bytes"] - mem0["fresh_bytes"],
            "fresh_worker_s": mem1["fresh_worker_s"] - mem0["fresh_worker_s"], "final_loss": losses[-1],
            "in_use_bytes_per_batch": in_use}


def section_training(dev, args, out):
    nb, bs, feats = args.batches, args.batch_size, args.features
    hidden = args.hidden
    heading("training", f"the book's MLP ({' -> '.join(f'Dense({h}, relu)' for h in hidden)} -> Dense(1)), "
            f"{nb} batches of {bs} x {feats}, on {dev}")
    am.manual_seed(args.seed)
    net = am.Sequential()
    net.add(*[am.Dense(h, activation="relu") for h in hidden], am.Dense(1))
    loss = am.L2Loss()
    trainer = am.SGD(net, lr=args.lr)

    for X, y in data_iter(dev, 1, bs, feats, nb + 1):
        break
    loss(net(X), y).wait_to_read()  # the book's warm-up: the first forward draws the weights

    # The book's two runs under `enqueue` (every queued op holds its outputs:
    # the backlog's memory shows), then the loop without a blocker under
    # `stream`, the module's default (PyTorch's caching allocator: a batch's
    # dropped tensors serve the next batch's ops at once).
    runs = []
    policy = am.alloc()
    try:
        for read_loss, alloc in ((True, "enqueue"), (False, "enqueue"), (False, "stream")):
            am.set_alloc(alloc)
            mem = get_mem()
            with Benchmark("time per epoch"):
                r = train_epoch(dev, net, loss, trainer, args, read_loss)
            print(f"increased memory: {get_mem() - mem:f} MB")
            r["alloc"] = alloc
            if alloc == "stream":
                r["mode"] = "stream"
            runs.append(r)
    finally:
        am.set_alloc(policy)
    sync, free, stream = runs
    per = sync["bytes_per_batch"]
    for r in runs:
        h, d, n = r["h_s"], r["d_s"], r["batches"]
        if r["mode"] == "batch":  # the loss read each batch: the frontend waits for the device every batch
            r["model_wall_s"] = n * (h + d)
            r["queued_batches"] = 1
        else:  # never waits: the slower side counts n times, the other once
            r["model_wall_s"] = n * max(h, d) + min(h, d)
            r["queued_batches"] = math.ceil(r["most_queued_ops"] / r["ops_per_batch"] - 1e-9)
        # enqueue: a queued batch holds its bytes; stream: the batches reuse
        # one batch's blocks, however many are queued
        r["held_batches"] = 1 if r["alloc"] == "stream" else r["queued_batches"]
        r["model_growth_bytes"] = r["held_batches"] * r["bytes_per_batch"]
    print(f"  per batch: {free['ops_per_batch']:.0f} ops, {mb(free['bytes_per_batch'])} allocated (the memory "
          f"model's unit; reading the loss adds {sync['ops_per_batch'] - free['ops_per_batch']:.0f} ops, "
          f"{sync['bytes_per_batch'] - free['bytes_per_batch']:.0f} bytes)")
    print("  mode   h (Python)   d (device)    wall      model     meas/model   samples/s   "
          "memory: tracked  model (batches x unit)  meas/model   RSS")
    for r in runs:
        print(f"  {r['mode']:<6}{human_s(r['h_s']):>11}{human_s(r['d_s']):>13}{human_s(r['wall_s']):>11}"
              f"{human_s(r['model_wall_s']):>11}{r['wall_s'] / r['model_wall_s']:>10.3f}{r['samples_per_s']:>13.0f}"
              f"   {mb(r['tracked_growth_bytes']):>14}  {mb(r['model_growth_bytes']):>10} ({r['held_batches']:>3} x)"
              f"{ratio(r['tracked_growth_bytes'], r['model_growth_bytes']):>13.3f}  {r['rss_growth_mb']:+.1f} MB")
    for r in runs:
        if r["fresh_bytes"] > 0.1 * per * r["batches"]:
            print(f"  {r['mode']}: {mb(r['fresh_bytes'])} of fresh memory made resident, "
                  f"{human_s(r['fresh_worker_s'])} of it on the worker's clock, in d "
                  f"({human_s(r['fresh_worker_s'] / r['batches'])} per batch): a host backs fresh pages at a cost "
                  f"a warm pool does not pay")
    speed = free["samples_per_s"] / sync["samples_per_s"]
    print(f"  none / batch: {speed:.2f}x the samples/s, {free['tracked_growth_bytes'] / max(1, sync['tracked_growth_bytes']):.0f}x"
          f" the memory; h is the loop's own time per batch (Python's calls and pushes, less the wait for the loss),"
          f" d the device's")
    stream_speed = stream["samples_per_s"] / free["samples_per_s"]
    print(f"  stream / none under enqueue: {stream_speed:.2f}x the samples/s, "
          f"{stream['tracked_growth_bytes'] / max(1, free['tracked_growth_bytes']):.3f}x the memory")
    out["training"] = {"batches": nb, "batch_size": bs, "features": feats, "hidden": hidden, "lr": args.lr,
                       "seed": args.seed, "runs": runs, "none_over_batch_samples": speed,
                       "stream_over_none_samples": stream_speed}


# ---------------------------------------------------------------------------
# exercises: the chapter's exercises, answered by measurement
def other_device(dev):
    """A device with its own queue and worker beside dev: the next CPU device,
    or the CPU beside a GPU."""
    return am.cpu(dev.index + 1) if not dev.is_cuda else am.cpu(0)


def closer(measured, models):
    """The name of the model nearest the measurement (by the ratio's distance from 1, in log)."""
    return min(models, key=lambda k: abs(math.log(ratio(measured, models[k]))) if models[k] > 0 else math.inf)


def exercise_formula(dev, args, t3):
    """Exercise 1: the one-barrier loop where the op is cheap (t2 < t1) and
    where it is expensive (t2 > t1), against both of the book's formulas."""
    n, reps = args.ops, args.reps
    clock = DeviceClock(dev)
    cases = []
    for name, shape in (("cheap", (1, 2)), ("expensive", (args.size, args.size))):
        x = am.ones(shape, device=dev)
        x.wait_to_read()
        measure_t12(dev, x, n)  # warm-up: the pool caches the loop's buffers
        async_loop(dev, x, n)
        v1, v2, loops, pushed, device_s = [], [], [], [], []
        for _ in range(reps):
            t1, t2 = measure_t12(dev, x, n)
            clock.start()
            a, p, _ = async_loop(dev, x, n)
            device_s.append(clock.stop() / n)
            v1.append(t1)
            v2.append(t2)
            loops.append(a)
            pushed.append(p / n)
        t1_alone, t2_alone, measured, t1, t2 = (statistics.median(v) for v in (v1, v2, loops, pushed, device_s))
        # t1 and t2 as the loop itself had them, each beside the other: its
        # pushes, and the device's time for its ops (on a CPU the worker's
        # busy time, its wake-ups included); alone, as in sync-vs-async
        c = {"case": name, "shape": list(shape), "ops": n, "t1_s": t1, "t2_s": t2, "t3_s": t3,
             "t1_alone_s": t1_alone, "t2_alone_s": t2_alone, "async_s": measured,
             # the frontend sets the pace: N pushes, then the last op and the barrier
             "frontend_model_s": n * t1 + t2 + t3,
             # the backend sets the pace: the first push, then N ops back to back, and the barrier
             "backend_model_s": t1 + n * t2 + t3,
             "n_t2_s": n * t2, "n_minus_1_t1_s": (n - 1) * t1}
        c["backend_bound"] = c["n_t2_s"] > c["n_minus_1_t1_s"]
        c["matches"] = closer(measured, {"frontend": c["frontend_model_s"], "backend": c["backend_model_s"]})
        cases.append(c)
    return cases


def exercise_wait(dev, args, t3):
    """Exercise 2: waitall against wait_to_read with independent work queued.
    k dots queued on dev, then a small op on another device (its own queue
    and worker): wait_to_read on the small op's result waits for that op's
    chain only; waitall for every queue. And the same small op on dev's own
    queue, where it runs after the dots (in order), so wait_to_read waits as
    long as waitall."""
    k, n, reps = EXERCISE_DOTS, args.size, args.reps
    other = other_device(dev)
    a = am.normal(shape=(n, n), device=dev)
    x_other, x_same = am.ones((1, 2), device=other), am.ones((1, 2), device=dev)
    am.waitall()
    rt_other = round_trip(x_other)  # a small op's push, run and barrier on the other queue
    clock = DeviceClock(dev)

    def queued(x):
        """k dots on dev, then y = x + 1 on x's queue; the time the pushes took."""
        t0 = time.perf_counter()
        bs = [am.dot(a, a) for _ in range(k)]
        y = x + 1
        return bs, y, t0

    wtr, wtr_pushes, pending, wall, device_s, same = [], [], [], [], [], []
    for r in range(reps + 1):  # the first is a warm-up
        # wait_to_read on the other queue's op
        am.waitall()
        q0 = am.queue_stats(dev)["completed"]
        bs, y, t0 = queued(x_other)
        pushes = time.perf_counter() - t0
        y.wait_to_read()
        s_wtr = time.perf_counter() - t0
        left = k - (am.queue_stats(dev)["completed"] - q0)  # dots not yet run when it returned
        am.waitall()
        # waitall
        clock.start()
        bs, y, t0 = queued(x_other)
        am.waitall()
        s_all = time.perf_counter() - t0
        d = clock.stop()
        # wait_to_read on an op queued behind the dots on their own queue
        am.waitall()
        bs, y, t0 = queued(x_same)
        y.wait_to_read()
        s_same = time.perf_counter() - t0
        am.waitall()
        if r:
            wtr.append(s_wtr)
            wtr_pushes.append(pushes)
            pending.append(left)
            wall.append(s_all)
            device_s.append(d)
            same.append(s_same)
    # Held still: with dev's worker paused the dots cannot run at all, and
    # wait_to_read on the other queue's op still returns (waitall would not).
    with am.paused(dev):
        q0 = am.queue_stats(dev)
        bs, y, _ = queued(x_other)
        y.wait_to_read()
        q1 = am.queue_stats(dev)
        held = (q1["pushed"] - q0["pushed"]) - (q1["completed"] - q0["completed"])
    am.waitall()
    m_wtr, m_pushes, m_all, d = (statistics.median(v) for v in (wtr, wtr_pushes, wall, device_s))
    return {"dots": k, "n": n, "device": str(dev), "other": str(other), "t3_s": t3,
            "wait_to_read_s": m_wtr, "pushes_s": m_pushes, "round_trip_other_s": rt_other,
            "wait_to_read_model_s": m_pushes + rt_other, "dots_left_at_return": statistics.median(pending),
            "waitall_s": m_all, "device_s": d, "waitall_model_s": d + t3,
            "same_queue_wait_to_read_s": statistics.median(same), "same_queue_model_s": d + t3,
            "dots_held_paused": held}


def exercise_cpu(dev, args, t3):
    """Exercise 3 (the PyTorch tab): the section's 10 x (randn, mm) on the
    CPU, through asyncmlp.torch, queued and finished; then the same with
    every push waiting for its op (set_blocking: PyTorch's eager CPU ops,
    which run on the calling thread)."""
    policy = am.alloc()
    import asyncmlp.torch as torch  # sets its policy ('stream') at import: restored below
    am.set_alloc(policy)
    cpu = dev if not dev.is_cuda else am.cpu(0)
    if cpu != dev:
        t3 = barrier_cost(cpu)
    device = torch.device("cpu", cpu.index)
    n, reps = args.size, args.reps
    a = torch.randn(size=(n, n), device=device)  # warm-up
    b = torch.mm(a, a)
    torch.cuda.synchronize(device)
    clock = DeviceClock(cpu)
    rows = {}
    blocking = am.blocking()
    try:
        for mode in ("async", "blocking"):
            am.set_blocking(mode == "blocking")
            queued, done, device_s = [], [], []
            for _ in range(reps):
                torch.cuda.synchronize(device)
                clock.start()
                t0 = time.perf_counter()
                for _ in range(EXERCISE_ITERATIONS):
                    a = torch.randn(size=(n, n), device=device)
                    b = torch.mm(a, a)
                queued.append(time.perf_counter() - t0)
                torch.cuda.synchronize(device)  # here: waits for every queue, the CPU's too
                done.append(time.perf_counter() - t0)
                device_s.append(clock.stop())
            rows[mode] = {"queued_s": statistics.median(queued), "done_s": statistics.median(done),
                          "device_s": statistics.median(device_s)}
            rows[mode]["done_model_s"] = rows[mode]["device_s"] + t3
    finally:
        am.set_blocking(blocking)
    return {"device": str(cpu), "n": n, "iterations": EXERCISE_ITERATIONS, "t3_s": t3, **{
        f"{mode}_{k}": v for mode, r in rows.items() for k, v in r.items()}}


EXERCISE_DOTS = 5  # exercise 2's independent work: this many dots of --size
EXERCISE_ITERATIONS = 10  # exercise 3: the section's 10 x (randn, mm)


def section_exercises(dev, args, out):
    heading("exercises", f"the chapter's exercises, answered by measurement, on {dev}")
    t3 = barrier_cost(dev)

    # 1
    print("\nExercise 1 (MXNet tab). Asynchrony brings N computations down to t1 + N t2 + t3. "
          "Why must N t2 > (N-1) t1 hold?")
    cases = exercise_formula(dev, args, t3)
    n = args.ops
    print(f"  y = x + 1, {n} times, one barrier at the end; t1 and t2 per op as the loop had them (its pushes, "
          f"the device's time for its ops), t3 = {human_s(t3)} a barrier; medians of {args.reps}")
    print("  x              t1          t2      N t2  (N-1) t1  measured   N t1 + t2 + t3  meas/model"
          "   t1 + N t2 + t3  meas/model")
    for c in cases:
        shape = "x".join(map(str, c["shape"]))
        print(f"  {shape:<10}{human_s(c['t1_s']):>10}{human_s(c['t2_s']):>12}{human_s(c['n_t2_s']):>11}"
              f"{human_s(c['n_minus_1_t1_s']):>11}{human_s(c['async_s']):>11}{human_s(c['frontend_model_s']):>14}"
              f"{ratio(c['async_s'], c['frontend_model_s']):>10.3f}{human_s(c['backend_model_s']):>16}"
              f"{ratio(c['async_s'], c['backend_model_s']):>12.3f}")
    print("  alone (t1 onto a paused queue, t2 that backlog drained): " + "; ".join(
        f"{'x'.join(map(str, c['shape']))} t1 {human_s(c['t1_alone_s'])}, t2 {human_s(c['t2_alone_s'])}"
        for c in cases))
    for c in cases:
        shape = "x".join(map(str, c["shape"]))
        holds = "holds" if c["backend_bound"] else "fails"
        formula = "t1 + N t2 + t3" if c["matches"] == "backend" else "N t1 + t2 + t3"
        print(f"   > x of {shape}: N t2 > (N-1) t1 {holds}; the loop took {human_s(c['async_s'])}, "
              f"{formula} ({c['matches']} sets the pace)")
    print("   > Answer: t1 + N t2 + t3 counts the first push, then N ops run back to back, then the barrier. "
          "That needs the worker to find the next op queued every time it finishes one: its N ops must outlast "
          "the frontend's other N-1 pushes, N t2 > (N-1) t1. When they do not (a cheap op, t2 < t1), the worker "
          "catches up and waits for each push, the frontend sets the pace, and the loop takes N t1 + t2 + t3.")

    # 2
    print("\nExercise 2 (MXNet tab). Measure the difference between waitall and wait_to_read. "
          "Hint: perform a number of instructions and synchronize for an intermediate result.")
    w = exercise_wait(dev, args, t3)
    k = w["dots"]
    print(f"  {k} x dot({w['n']}x{w['n']}) queued on {w['device']}, then y = x + 1 on {w['other']} "
          f"(its own queue and worker); medians of {args.reps}")
    print(f"  y.wait_to_read()  {human_s(w['wait_to_read_s']):>11}   model {human_s(w['wait_to_read_model_s']):>11}"
          f" (the pushes {human_s(w['pushes_s'])} + a small op's round trip on {w['other']} "
          f"{human_s(w['round_trip_other_s'])})  {ratio(w['wait_to_read_s'], w['wait_to_read_model_s']):.3f}; "
          f"{w['dots_left_at_return']:.0f} of {k} dots not yet run when it returned")
    print(f"  waitall()         {human_s(w['waitall_s']):>11}   model {human_s(w['waitall_model_s']):>11}"
          f" (d, the dots on the device, + t3)  {ratio(w['waitall_s'], w['waitall_model_s']):.3f}")
    print(f"  y on {w['device']}'s own queue, behind the dots: y.wait_to_read() {human_s(w['same_queue_wait_to_read_s'])}"
          f", model {human_s(w['same_queue_model_s'])} (d + t3: in order, y's op runs after the dots)")
    print(f"  with {w['device']} paused, y.wait_to_read() on {w['other']} returned with {w['dots_held_paused']} "
          f"of {k} dots held unstarted (waitall would have waited for the pause to end)")
    print(f"   > wait_to_read waits for the op that wrote y and what it depends on; waitall for every queue. "
          f"{ratio(w['waitall_s'], w['wait_to_read_s']):.0f}x here. On one in-order queue the difference "
          "vanishes (y's op runs after the dots anyway): it shows between queues, other devices' or the data "
          "queue's.")

    # 3
    print("\nExercise 3 (PyTorch tab). On the CPU, benchmark the same matrix multiplication operations as in "
          "this section. Can you still observe asynchrony via the backend?")
    c = exercise_cpu(dev, args, t3)
    print(f"  {c['iterations']} x (torch.randn(size=({c['n']}, {c['n']})), torch.mm) on {c['device']} through "
          f"asyncmlp.torch; medians of {args.reps}")
    print("  mode       the loop    finished   queued / finished   d + t3")
    for mode, what in (("async", "asynchronous (the default)"), ("blocking", "every push waits (set_blocking)")):
        print(f"  {mode:<9}{human_s(c[mode + '_queued_s']):>11}{human_s(c[mode + '_done_s']):>12}"
              f"{ratio(c[mode + '_queued_s'], c[mode + '_done_s']):>14.4f}{human_s(c[mode + '_done_model_s']):>16}"
              f"   {what}")
    print(f"   > Yes, here: the CPU device has its own worker, so the loop returned after "
          f"{human_s(c['async_queued_s'])} while the work took {human_s(c['async_done_s'])}. In PyTorch, no: its "
          "CPU ops run on the calling thread, so the loop returns when the work is done, as the blocking row "
          "does (queued / finished about 1).")
    out["exercises"] = {"ops": n, "reps": args.reps, "alloc": am.alloc(), "t3_s": t3, "formula": cases,
                        "wait": w, "cpu": c}


def markdown_table(f):
    """The measured table of docs/python.md from the figures of a --json run."""
    rows = []

    def row(section, what, measured, model="", r=None):
        rows.append(f"| {section} | {what} | {measured} | {model} | {'' if r is None else f'{r:.3f}'} |")

    if "asynchrony" in f:
        a = f["asynchrony"]
        n = a["n"]
        row("asynchrony", f"10 × (normal {n}², dot) queued, the loop's time", human_s(a["queued_s"]))
        row("asynchrony", "'Done': both loops' work, finished", human_s(a["done_s"]),
            f"{human_s(a['done_model_s'])} (20 d − the first loop's time)", a["done_s"] / a["done_model_s"])
        row("asynchrony", "NumPy, the same loop (float64, on Python's thread)", human_s(a["numpy_s"]))
    if "blockers" in f:
        b = f["blockers"]
        for r in b["rows"]:
            row("blockers", f"dot({b['n']}²), then {r['blocker']}", human_s(r["measured_s"]),
                f"{human_s(r['predicted_s'])} (d + t3)", r["measured_s"] / r["predicted_s"])
    if "sync_vs_async" in f:
        v = f["sync_vs_async"]
        n = v["ops"]
        row("sync-vs-async", "t1 per op: alone / beside the running worker",
            f"{human_s(v['t1_s'])} / {human_s(v['t1_beside_worker_s'])}")
        row("sync-vs-async", "t2 per op, t3 per barrier", f"{human_s(v['t2_s'])}, {human_s(v['t3_s'])}")
        row("sync-vs-async", f"y = x + 1 × {n}, a barrier each op", human_s(v["synced_s"]),
            f"{human_s(v['model_synced_s'])} (N (t1 + t2 + t3))", v["synced_s"] / v["model_synced_s"])
        book = "N t1 + t2 + t3" if max(v["t1_s"], v["t1_beside_worker_s"]) > v["t2_s"] else "t1 + N t2 + t3"
        row("sync-vs-async", f"y = x + 1 × {n}, one barrier ({v['wakes']:.0f} pushes woke the worker)",
            human_s(v["async_s"]), f"{human_s(v['model_async_s'])} ({book}, t1 beside)",
            v["async_s"] / v["model_async_s"])
        row("sync-vs-async", "the same, modelled with t1 alone", human_s(v["async_s"]),
            f"{human_s(v['model_async_t1_alone_s'])}", v["async_s"] / v["model_async_t1_alone_s"])
        row("sync-vs-async", "a barrier each op / one barrier", f"{v['synced_s'] / v['async_s']:.2f}×")
    if "training" in f:
        t = f["training"]
        for r in t["runs"]:
            m = r["mode"]
            formula = "N (h + d)" if m == "batch" else "N max(h, d) + min(h, d)"
            m = f"{'none' if m == 'stream' else m} ({r.get('alloc', 'enqueue')})"  # the stream run is none's loop
            row("training", f"{m}: h (Python), d (device) per batch", f"{human_s(r['h_s'])}, {human_s(r['d_s'])}")
            row("training", f"{m}: wall, {r['samples_per_s']:.0f} samples/s", human_s(r["wall_s"]),
                f"{human_s(r['model_wall_s'])} ({formula})", r["wall_s"] / r["model_wall_s"])
            row("training", f"{m}: memory growth, tracked (RSS {r['rss_growth_mb']:+.1f} MB)",
                mb(r["tracked_growth_bytes"]), f"{mb(r['model_growth_bytes'])} ({r.get('held_batches', r['queued_batches'])} × "
                f"{mb(r['bytes_per_batch'])})", ratio(r["tracked_growth_bytes"], r["model_growth_bytes"]))
            if r["fresh_bytes"] > 0:
                row("training", f"{m}: fresh memory made resident; the worker's time for it, in d",
                    f"{mb(r['fresh_bytes'])}; {human_s(r['fresh_worker_s'])} ({human_s(r['fresh_worker_s'] / r['batches'])}"
                    " a batch)")
        row("training", "none / batch, samples/s", f"{t['none_over_batch_samples']:.2f}×")
        if "stream_over_none_samples" in t:
            row("training", "stream / none, samples/s", f"{t['stream_over_none_samples']:.2f}×")
    if "exercises" in f:
        e = f["exercises"]
        for c in e["formula"]:
            x = f"x of {'×'.join(map(str, c['shape']))}"
            row("exercises", f"1: {x}: t1, t2 per op in the one-barrier loop", f"{human_s(c['t1_s'])}, {human_s(c['t2_s'])}")
            row("exercises", f"1: {x}: N t2 against (N − 1) t1, N = {c['ops']}",
                f"{human_s(c['n_t2_s'])} {'>' if c['backend_bound'] else '<'} {human_s(c['n_minus_1_t1_s'])}")
            for key, formula in (("frontend_model_s", "N t1 + t2 + t3"), ("backend_model_s", "t1 + N t2 + t3")):
                fits = " (the fit)" if key.startswith(c["matches"]) else ""
                row("exercises", f"1: {x}: y = x + 1 × {c['ops']}, one barrier, against {formula}{fits}",
                    human_s(c["async_s"]), human_s(c[key]), c["async_s"] / c[key])
        w = e["wait"]
        dots = f"{w['dots']} × dot({w['n']}²) on {w['device']}"
        row("exercises", f"2: {dots}, then y = x + 1 on {w['other']}: y.wait_to_read()", human_s(w["wait_to_read_s"]),
            f"{human_s(w['wait_to_read_model_s'])} (the pushes + a round trip on {w['other']})",
            w["wait_to_read_s"] / w["wait_to_read_model_s"])
        row("exercises", f"2: the same, waitall()", human_s(w["waitall_s"]), f"{human_s(w['waitall_model_s'])} (d + t3)",
            w["waitall_s"] / w["waitall_model_s"])
        row("exercises", f"2: y on {w['device']}'s own queue, behind the dots: y.wait_to_read()",
            human_s(w["same_queue_wait_to_read_s"]), f"{human_s(w['same_queue_model_s'])} (d + t3)",
            w["same_queue_wait_to_read_s"] / w["same_queue_model_s"])
        row("exercises", f"2: dots not yet run when y.wait_to_read() returned; held with {w['device']} paused",
            f"{w['dots_left_at_return']:.0f} of {w['dots']}; {w['dots_held_paused']} of {w['dots']}")
        c = e["cpu"]
        what = f"3: {c['iterations']} × (torch.randn {c['n']}², torch.mm) on {c['device']}"
        for mode, how in (("async", "asynchronous"), ("blocking", "every push waiting (PyTorch's CPU)")):
            row("exercises", f"{what}, {how}: the loop / finished",
                f"{human_s(c[mode + '_queued_s'])} / {human_s(c[mode + '_done_s'])}",
                f"{human_s(c[mode + '_done_model_s'])} (finished: d + t3)", c[mode + "_done_s"] / c[mode + "_done_model_s"])
            row("exercises", f"{what}, {how}: queued / finished", f"{c[mode + '_queued_s'] / c[mode + '_done_s']:.4f}")
    t = f.get("training")
    sizes = (f", training {t['batches']} batches of {t['batch_size']} × {t['features']}, hidden "
             f"{','.join(map(str, t['hidden']))}" if t else "")
    head = (f"`examples/chapter.py --device {f['device'].split(':')[0]}` on {f['device']}: {f['cores']} cores, "
            f"load average {f['load_average']:.2f}, OPENBLAS_CORETYPE {f['openblas_coretype'] or 'unset'}{sizes}; "
            f"medians of {f.get('reps', 5)} where repeated.\n\n")
    return (head + "| section | figure | measured | model | measured / model |\n|---|---|---|---|---|\n" +
            "\n".join(rows) + "\n")


def parse_args(argv):
    ap = OneLineParser(prog="chapter.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="auto", help="cpu, cpu:N, cuda, cuda:N or auto (cuda:0 when a GPU is seen)")
    ap.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated, of: " + ", ".join(SECTIONS))
    ap.add_argument("--size", type=int, default=1000,
                    help="the matrices' side in asynchrony, blockers and exercises (1000)")
    ap.add_argument("--ops", type=int, default=1000, help="y = x + 1 this many times, in exercise 1 too (1000)")
    ap.add_argument("--reps", type=int, default=5, help="repeats of each timing; medians are quoted (5)")
    ap.add_argument("--batches", type=int, default=150, help="training batches per mode (the book's 150)")
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--features", type=int, default=512)
    ap.add_argument("--hidden", default="2048,512", help="hidden widths, comma-separated (the book's 2048,512)")
    ap.add_argument("--lr", type=float, default=0.005)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true",
                    help="small sizes for a quick look (and the test command): 200x200 matrices (the exercises' too), "
                         "200 ops, 3 repeats, 30 batches of 64 x 32 with hidden 128,32")
    ap.add_argument("--json", action="store_true",
                    help="standard output gets every figure measured as one JSON document; the text goes to "
                         "standard error")
    ap.add_argument("--markdown", action="store_true",
                    help="read such a JSON document from standard input and print the measured table of "
                         "docs/python.md; runs nothing")
    args = ap.parse_args(argv)
    if args.quick:
        args.size, args.ops, args.reps = 200, 200, 3
        args.batches, args.batch_size, args.features, args.hidden = 30, 64, 32, "128,32"
    sections = [s for s in args.sections.split(",") if s]
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown or not sections:
        ap.error(f"--sections: unknown section '{unknown[0] if unknown else ''}' (of: {', '.join(SECTIONS)})")
    args.sections = sections
    try:
        args.hidden = [int(h) for h in args.hidden.split(",")]
    except ValueError:
        ap.error(f"--hidden: '{args.hidden}' is not comma-separated widths")
    for name in ("size", "ops", "reps", "batches", "batch_size", "features"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    if any(h < 1 for h in args.hidden) or not args.lr > 0:
        ap.error("--hidden widths and --lr must be positive")
    try:
        args.dev = (am.cuda(0) if am.num_gpus() > 0 else am.cpu(0)) if args.device == "auto" else am.device(args.device)
        am.ones((1,), device=args.dev).wait_to_read()  # a device this process cannot use fails here, with its line
    except am.Error as e:
        ap.error(f"--device {args.device}: {e}")
    return args


def main(argv):
    if "--markdown" in argv:
        if len(argv) != 1:
            OneLineParser(prog="chapter.py").error("--markdown takes no other option")
        text = sys.stdin.read(MARKDOWN_INPUT_LIMIT + 1)  # /dev/zero or an endless pipe: refused, not read for ever
        try:
            if len(text) > MARKDOWN_INPUT_LIMIT:
                raise ValueError(f"over {MARKDOWN_INPUT_LIMIT >> 20} MiB")
            table = markdown_table(json.loads(text))
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
            sys.stderr.write(f"chapter.py: --markdown: standard input is not the JSON of --json ({e!r})\n")
            return 2
        sys.stdout.write(table)
        return 0
    args = parse_args(argv)
    if args.json:
        with contextlib.redirect_stdout(sys.stderr):
            out = run_sections(args)
        json.dump(out, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        run_sections(args)
    return 0


def run_sections(args):
    dev = args.dev
    print(f"asyncmlp from Python on {dev}: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    out = {"device": str(dev), "cores": os.cpu_count(), "load_average": os.getloadavg()[0], "reps": args.reps,
           "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", "")}
    run = {"asynchrony": section_asynchrony, "blockers": section_blockers, "sync-vs-async": section_sync_vs_async,
           "training": section_training, "exercises": section_exercises}
    for s in args.sections:
        run[s](dev, args, out)
    out["sections"] = args.sections
    return out


if __name__ == "__main__":
    # Python ignores SIGPIPE and SIGXFSZ: a closed pipe, a full disk or a
    # file past `ulimit -f` is a write error (OSError), reported below.
    if sys.stdout is None:
        sys.stderr.write("chapter.py: standard output is closed\n")
        sys.exit(1)
    try:
        rc = main(sys.argv[1:])
        sys.stdout.flush()
        sys.exit(rc)
    except am.Error as e:  # a failed run (out of memory, a kernel error): one line
        sys.stderr.write(f"chapter.py: {e}\n")
        sys.exit(1)
    except OSError as e:  # standard output: its reader gone, a full disk, a file past ulimit -f
        sys.stderr.write(f"chapter.py: standard output: {e.strerror or e}\n")
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error as Python exits
        sys.exit(1)
