"""import asyncmlp (python/): the surface, the blockers, autograd, the
errors and their lines, NumPy round trips, the layers training. Run by ctest
in the release build with PYTHONPATH=<build>/python (pytest)."""
import math
import threading

import numpy as np
import pytest

import asyncmlp as am


def test_devices():
    assert str(am.cpu()) == "cpu:0" and str(am.cpu(1)) == "cpu:1"
    assert str(am.gpu(0)) == "cuda:0" and am.cuda(1) == am.gpu(1)
    assert am.device("cpu:1") == am.cpu(1)
    assert am.num_gpus() >= 0
    assert not am.cpu().is_cuda and am.cuda().is_cuda


def test_creation_and_shapes():
    x = am.ones((2, 3))
    assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6 and x.device == am.cpu()
    assert np.array_equal(am.zeros(4).asnumpy(), np.zeros(4, np.float32))
    assert np.array_equal(am.full((2, 2), 2.5, device="cpu:1").asnumpy(), np.full((2, 2), 2.5, np.float32))
    assert am.full((2, 2), 1.0, device="cpu:1").device == am.cpu(1)
    n = am.normal(1.0, 2.0, shape=(10000,)).asnumpy()
    assert abs(n.mean() - 1.0) < 0.1 and abs(n.std() - 2.0) < 0.1
    assert am.randn((3, 4)).shape == (3, 4)


def test_numpy_round_trip_is_bitwise():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((17, 5)).astype(np.float32)
    a[0, 0], a[1, 1] = np.float32(1e-45), np.float32(-0.0)  # a subnormal and a negative zero survive
    back = am.array(a).asnumpy()
    assert back.dtype == np.float32 and back.shape == a.shape
    assert back.tobytes() == a.tobytes()
    assert am.array(np.arange(6, dtype=np.float64).reshape(2, 3)).asnumpy().tolist() == [[0, 1, 2], [3, 4, 5]]


def test_math():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 2, np.float32)
    x, y = am.array(a), am.array(b)
    assert np.array_equal((x + y).asnumpy(), a + b)
    assert np.array_equal((x - y).asnumpy(), a - b)
    assert np.array_equal((x + 1).asnumpy(), a + 1) and np.array_equal((1 + x).asnumpy(), a + 1)
    assert np.array_equal((x - 1).asnumpy(), a - 1) and np.array_equal((1 - x).asnumpy(), 1 - a)
    assert np.array_equal((x * 3).asnumpy(), a * 3) and np.array_equal((3 * x).asnumpy(), a * 3)
    assert np.array_equal((-x).asnumpy(), -a)
    assert np.array_equal((x * y).asnumpy(), a * b) and np.array_equal(am.multiply(x, y).asnumpy(), a * b)
    assert np.array_equal((x / 4).asnumpy(), a / 4)
    z = am.ones((1, 2)) * am.ones((1, 2)) + 2  # the book's z = x * y + 2
    assert z.asnumpy().tolist() == [[3.0, 3.0]]
    m = am.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    assert np.allclose(am.dot(x, m).asnumpy(), a @ np.arange(12, dtype=np.float32).reshape(3, 4))
    assert np.allclose((x @ m).asnumpy(), am.matmul(x, m).asnumpy())
    assert np.array_equal(am.relu(x - 2).asnumpy(), np.maximum(a - 2, 0))
    assert am.sum(x).item() == 15.0 and x.sum().item() == 15.0
    assert am.mean(x).item() == 2.5 and x.mean().item() == 2.5
    assert float(x.sum()) == 15.0
    assert np.array_equal(x.copyto(am.cpu(1)).asnumpy(), a)


def test_errors_carry_the_librarys_line():
    with pytest.raises(am.ShapeError, match=r"\(2, 3\).*\(4, 5\)"):
        am.ones((2, 3)) + am.ones((4, 5))
    with pytest.raises(am.DeviceError, match="tpu"):
        am.device("tpu")
    with pytest.raises(am.Error):  # every library error is an asyncmlp.Error
        am.dot(am.ones((2, 3)), am.ones((2, 3)))
    with pytest.raises(am.ShapeError):
        am.ones((2, 3)).item()
    assert issubclass(am.OutOfMemory, am.Error) and issubclass(am.ShapeError, am.Error)


def test_a_queued_result_is_not_final_until_a_blocker_waits():
    dev = am.cpu(2)
    x = am.ones((64, 64), device=dev)
    x.wait_to_read()
    before = am.queue_stats(dev)
    with am.paused(dev):  # the worker starts nothing: the call returns with its op queued
        y = x + 1
        queued = am.queue_stats(dev)
        assert queued["pushed"] > before["pushed"]
        assert queued["launched"] == before["launched"]
    with am.paused(dev):  # an input Python lets go of lives while a queued op reads it
        a = am.full((64, 64), 1.5, device=dev)
        b = a * 2
        del a
    assert np.array_equal(b.asnumpy(), np.full((64, 64), 3, np.float32))
    y.wait_to_read()  # the blocker: y's writer has run
    done = am.queue_stats(dev)
    assert done["launched"] >= queued["pushed"]
    assert np.array_equal(y.asnumpy(), np.full((64, 64), 2, np.float32))


def test_blockers_release_the_gil():
    # A wait on a busy queue: another Python thread runs during it, which it
    # could not if the wait held the GIL. The other thread stamps the time of
    # each of its steps; a step well inside the wait (past the interpreter's
    # switch interval after it began and before it ended) is one the GIL allowed. The work grows
    # until the wait lasts 100 ms.
    import sys
    import time
    dev = am.cpu(3)
    x = am.ones((512, 512), device=dev)
    x.wait_to_read()
    stamps = []
    stop = threading.Event()

    def tick():  # a stamp every 100 steps
        n = 0
        while not stop.is_set():
            n += 1
            if n % 100 == 0:
                stamps.append(time.perf_counter())

    t = threading.Thread(target=tick)
    t.start()
    try:
        for n in (4, 16, 64, 256, 1024):
            y = x
            for _ in range(n):
                y = am.dot(y, x) * (1.0 / 512)
            t0 = time.perf_counter()
            y.wait_to_read()
            t1 = time.perf_counter()
            if t1 - t0 >= 0.1:
                break
        margin = 4 * sys.getswitchinterval()  # the switches into and out of the call
        inside = [s for s in list(stamps) if t0 + margin < s < t1 - margin]
    finally:
        stop.set()
        t.join()
    assert t1 - t0 >= 0.1, t1 - t0
    assert inside, "no step of another thread ran during a %.3f s wait" % (t1 - t0)


def test_waitall_and_repr_block():
    x = am.ones((3,)) * 2
    am.waitall()
    assert am.queue_stats(am.cpu())["backlog_bytes"] == 0
    text = repr(x)
    assert "2" in text


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 3)).astype(np.float32)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    W = am.array(w).requires_grad_()
    assert W.requires_grad and W.grad is None

    def loss_of(wv):
        return float(np.maximum(a @ wv, 0).sum())

    loss = am.sum(am.relu(am.dot(am.array(a), W)))
    loss.backward()
    g = W.grad.asnumpy()
    eps = 1e-2
    for i in range(3):
        for j in range(2):
            up, down = w.copy(), w.copy()
            up[i, j] += eps
            down[i, j] -= eps
            fd = (loss_of(up) - loss_of(down)) / (2 * eps)
            assert math.isclose(g[i, j], fd, rel_tol=1e-2, abs_tol=1e-2), (i, j, g[i, j], fd)


def test_elementwise_products_differentiate_and_no_grad_records_nothing():
    rng = np.random.default_rng(4)
    av, bv = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    a, b = am.array(av).requires_grad_(), am.array(bv).requires_grad_()
    am.sum(a * b + a * a).backward()  # d/da = b + 2a, d/db = a
    assert np.allclose(a.grad.asnumpy(), bv + 2 * av, rtol=1e-6)
    assert np.allclose(b.grad.asnumpy(), av, rtol=1e-6)
    with am.no_grad():
        c = a * b
    assert not c.requires_grad
    assert (a * b).requires_grad
    with pytest.raises(am.ShapeError, match=r"mul: shapes \(3, 4\) and \(4, 3\) differ"):
        a * am.ones((4, 3))


def test_a_deep_graph_dropped_without_a_backward_pass_is_freed():
    # 150,000 recorded ops in a chain, dropped: freed node by node, not by a recursion as deep
    # as the chain (which overflowed the stack and killed the interpreter with a segfault).
    x = am.ones((1,)).requires_grad_()
    y = x
    for _ in range(150000):
        y = y + 1
    assert y.item() == 150001.0
    del y
    assert x.requires_grad and am.sum(x * 2).item() == 2.0


def test_sgd_zero_grad_drops_the_gradients():
    net = am.Sequential()
    net.add(am.Dense(2, in_units=3))
    opt = am.SGD(net, lr=0.1)
    am.L2Loss()(net(am.ones((4, 3))), am.ones((4, 2))).backward()
    w = net.parameters()[0]
    assert w.grad is not None
    opt.step(4)
    opt.zero_grad()
    assert w.grad is None


def test_the_layers_train():
    am.manual_seed(5)
    X = am.randn((256, 8))
    true_w = am.randn((8, 1))
    Y = am.dot(X, true_w)
    net = am.Sequential()
    net.add(am.Dense(16, activation="relu"), am.Dense(1))
    assert len(net) == 2
    loss_fn = am.L2Loss()
    opt = am.SGD(net, lr=0.05)
    first = None
    for _ in range(60):
        l = loss_fn(net(X), Y)
        l.backward()
        opt.step(256)
        v = am.mean(l).item()
        first = v if first is None else first
    assert v < first / 4, (first, v)
    assert len(net.parameters()) == 4
    with pytest.raises(am.ShapeError, match="activation"):
        am.Dense(4, activation="tanh")


def read_safetensors(path):
    """A safetensors file's float32 tensors, by name (the format's header: its
    length as 8 bytes little-endian, then JSON naming each tensor's offsets)."""
    import json
    import struct
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, t in header.items():
        if name != "__metadata__":
            lo, hi = t["data_offsets"]
            assert t["dtype"] == "F32"
            out[name] = np.frombuffer(blob[8 + n + lo:8 + n + hi], np.float32).reshape(t["shape"])
    return out


def test_the_same_seed_trains_the_same_parameters_as_train_mlp(tmp_path):
    """Python's loop over the same seed draws what train_mlp draws (the
    weights at the first forward, then each batch's X) and takes the same
    steps: the parameters train_mlp saves equal Python's bit for bit."""
    import os
    import subprocess
    train_mlp = os.environ.get("AMLP_TRAIN_MLP")
    if not train_mlp:
        pytest.skip("AMLP_TRAIN_MLP (the path of train_mlp) is not set: the test command sets it")
    saved = tmp_path / "p.safetensors"
    r = subprocess.run([train_mlp, "--device", "cpu", "--seed", "7", "--features", "8", "--hidden", "16,4",
                        "--batch-size", "32", "--batches", "3", "--lr", "0.1", "--save", str(saved)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    am.manual_seed(7)
    net = am.Sequential()
    net.add(am.Dense(16, activation="relu"), am.Dense(4, activation="relu"), am.Dense(1))
    with am.no_grad():
        net(am.zeros((1, 8)))  # deferred initialisation: the weights, before any data, as train_mlp does
    loss, opt = am.L2Loss(), am.SGD(net, lr=0.1)
    for _ in range(3):
        X, y = am.randn((32, 8)), am.ones((32,))
        loss(net(X), y).backward()
        opt.step(32)
        opt.zero_grad()
    theirs = read_safetensors(saved)
    ours = net.parameters()
    names = [f"dense{i}.{p}" for i in range(3) for p in ("weight", "bias")]
    assert sorted(theirs) == sorted(names)
    for name, p in zip(names, ours):
        assert theirs[name].tobytes() == p.asnumpy().tobytes(), name


def test_the_same_seed_draws_the_same_numbers():
    am.manual_seed(11)
    a = am.randn((100,)).asnumpy()
    am.manual_seed(11)
    b = am.randn((100,)).asnumpy()
    assert a.tobytes() == b.tobytes()
    am.manual_seed(12)
    assert am.randn((100,)).asnumpy().tobytes() != a.tobytes()


def test_settings_and_statistics():
    dev = am.cpu(4)
    am.set_blocking(True)
    try:
        assert am.blocking()
        y = am.ones((32, 32), device=dev) + 1  # synchronous: done when the call returns
        s = am.queue_stats(dev)
        assert s["launched"] == s["pushed"]
    finally:
        am.set_blocking(False)
    assert not am.blocking()
    m = am.memory_stats(dev)
    assert m["bytes_in_use"] >= 32 * 32 * 4 and m["peak_bytes"] >= m["bytes_in_use"]
    del y
    for key in ("bytes_allocated_total", "free_count", "fresh_bytes", "fresh_worker_s", "reserved_bytes"):
        assert key in m
    q = am.queue_stats(dev)
    assert q["depth"] == q["pushed"] - q["completed"] and q["busy_s"] > 0 and q["wakes"] <= q["pushed"]
    assert am.process_rss_bytes() > 0
    a = am.DeviceTimer.mark(dev)
    am.dot(am.ones((256, 256), device=dev), am.ones((256, 256), device=dev))
    b = am.DeviceTimer.mark(dev)
    assert b.seconds_since(a) > 0 and b.reached()
    am.reset_peaks(dev)
    assert am.queue_stats(dev)["peak_unlaunched"] == 0
    am.set_memory_limit(dev, 1 << 20)
    with pytest.raises(am.OutOfMemory, match="out of memory"):
        am.ones((1024, 1024), device=dev).wait_to_read()
    am.set_memory_limit(dev, 0)
