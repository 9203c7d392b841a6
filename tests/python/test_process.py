"""import asyncmlp in a process's life: a blocker inside paused(), Ctrl-C
during each blocker and during an op back-pressure holds, the interpreter's exit with a daemon thread pushing,
the GIL released while a push waits under back-pressure. Each runs in a
child interpreter (a hang or an abort there fails the test, not pytest)."""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

BLOCKERS = {  # each blocker on a tensor x of `dev`
    "asnumpy": "x.asnumpy()",
    "numpy": "x.numpy()",
    "item": "am.sum(x).item()",
    "float": "float(am.sum(x))",
    "wait_to_read": "x.wait_to_read()",
    "waitall": "am.waitall()",
    "repr": "repr(x)",
    "seconds_since": "am.DeviceTimer.mark(dev).seconds_since(am.DeviceTimer.mark(dev))",
}


def python(code, timeout=60, **kw):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ), **kw)


@pytest.mark.parametrize("blocker", sorted(BLOCKERS))
def test_a_blocker_inside_paused_raises_at_once(blocker):
    r = python(f"""
        import asyncmlp as am
        dev = am.cpu(0)
        x = am.ones((2, 2), device=dev)
        x.wait_to_read()
        with am.paused(dev):
            x = x + 1
            try:
                {BLOCKERS[blocker]}
            except am.Error as e:
                print("raised:", type(e).__name__, e)
        print(x.asnumpy().tolist())  # the queued work ran once the block ended
        """, timeout=30)
    assert r.returncode == 0, r.stderr
    raised, values = r.stdout.splitlines()
    assert raised == ("raised: Error a blocker inside `with asyncmlp.paused(cpu:0):` would wait for ever: "
                      "cpu:0 starts the ops queued in the block when it ends (block after it)"), raised
    assert values == "[[2.0, 2.0], [2.0, 2.0]]"


def test_an_op_held_by_back_pressure_inside_paused_raises_at_once():
    r = python("""
        import asyncmlp as am
        dev = am.cpu(0)
        x = am.ones((2, 2), device=dev)
        x.wait_to_read()
        am.set_max_pending(ops=4)
        with am.paused(dev):
            try:
                for i in range(10):
                    x = x + 1
            except am.Error as e:
                print("raised at op", i, type(e).__name__, e, am.queue_stats(dev)["unlaunched"])
        print(x.asnumpy().tolist())  # the four queued ops ran once the block ended
        """, timeout=30)
    assert r.returncode == 0, r.stderr
    raised, values = r.stdout.splitlines()
    assert raised == ("raised at op 4 Error an op inside `with asyncmlp.paused(cpu:0):` past set_max_pending's "
                      "bound would wait for ever: cpu:0 starts the ops queued in the block when it ends 4"), raised
    assert values == "[[5.0, 5.0], [5.0, 5.0]]"


def test_a_blocker_on_another_device_inside_paused_waits():
    r = python("""
        import asyncmlp as am
        with am.paused(am.cpu(0)):
            print((am.ones((2, 2), device=am.cpu(1)) + 1).asnumpy().tolist())
        """, timeout=30)
    assert r.returncode == 0 and r.stdout == "[[2.0, 2.0], [2.0, 2.0]]\n", r.stderr


# Ctrl-C during each blocker, and during an op back-pressure holds (HELD_PUSH:
# set_max_pending(ops=1) with an op already queued). The child: for each,
# another thread holds the device paused (so the call waits, however fast the
# machine), the parent sends SIGINT once the child says it is about to block;
# the child prints when KeyboardInterrupt reached it (CLOCK_MONOTONIC, shared
# by both processes) and what is queued, then lets the device go and shows the
# queued work ran.
HELD_PUSH = "held_push"
CTRL_C_CALLS = {**BLOCKERS, HELD_PUSH: "x + 1"}
CTRL_C_CHILD = """
import sys, threading, time
import asyncmlp as am
dev = am.cpu(0)
for name, call in CALLS.items():
    x = am.ones((64, 64), device=dev)
    x.wait_to_read()
    hold, held = threading.Event(), threading.Event()
    def holder():
        with am.paused(dev):
            held.set()
            hold.wait()
    t = threading.Thread(target=holder)
    t.start()
    held.wait()
    x = x * 3  # queued behind the pause
    if name == HELD_PUSH:
        am.set_max_pending(ops=1)  # x * 3 fills the bound: the call's op waits for room
    print("blocking", name, flush=True)
    block = eval("lambda: " + call)  # (an exec'd KeyboardInterrupt would mark the exit as interrupted)
    try:
        block()
        print("returned", name, flush=True)
    except KeyboardInterrupt:
        s = am.queue_stats(dev)
        print("interrupted", name, time.monotonic(), s["depth"] > 0, s["unlaunched"], flush=True)
    am.set_max_pending(ops=0)
    hold.set()
    t.join()
    assert x.asnumpy().max() == 3.0 and x.asnumpy().min() == 3.0  # the queued op ran after all
    print("ran", name, flush=True)
"""


def test_ctrl_c_interrupts_every_blocker_at_once():
    child = subprocess.Popen([sys.executable, "-c", f"CALLS = {CTRL_C_CALLS!r}\nHELD_PUSH = {HELD_PUSH!r}\n" + CTRL_C_CHILD],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    latencies = {}
    watchdog = threading.Timer(120, child.kill)  # a call that never hears the signal fails, not hangs
    watchdog.start()
    try:
        for _ in CTRL_C_CALLS:
            line = child.stdout.readline().split()
            assert line[:1] == ["blocking"], (line, child.stderr.read() if child.poll() is not None else "")
            time.sleep(0.2)  # into the blocker: it waits on the held device until the signal
            sent = time.monotonic()
            child.send_signal(signal.SIGINT)
            said = child.stdout.readline().split()
            assert said[:2] == ["interrupted", line[1]], (said, line)
            latencies[line[1]] = float(said[2]) - sent
            assert said[3] == "True", f"{line[1]}: nothing was left queued: the blocker did not wait"
            if line[1] == HELD_PUSH:
                assert said[4] == "1", f"{said}: the held op was queued after all"
            assert child.stdout.readline().split() == ["ran", line[1]]
        assert child.wait(timeout=60) == 0, child.stderr.read()
    finally:
        watchdog.cancel()
        if child.poll() is None:
            child.kill()
            child.wait()
    print("Ctrl-C to KeyboardInterrupt, seconds:", {k: round(v, 4) for k, v in latencies.items()})
    # The poll is every 10 ms; the bound is loose so that a loaded machine passes.
    assert max(latencies.values()) < 1.0, latencies


def test_the_interpreter_exits_cleanly_with_a_daemon_thread_pushing():
    for _ in range(2):
        r = python("""
            import threading
            import asyncmlp as am
            going = threading.Event()
            def push():
                a = am.ones((200, 200))
                while True:
                    a = am.dot(a, a) * 1e-3
                    a.wait_to_read()
                    going.set()
            threading.Thread(target=push, daemon=True).start()
            going.wait()
            """, timeout=60)
        assert r.returncode == 0 and "terminate" not in r.stderr, (r.returncode, r.stderr)


@pytest.mark.parametrize("create", ["am.ones(2, device=dev)", "am.zeros(2, device=dev)",
                                    "am.full(2, 1.5, device=dev)", "am.normal(0, 1, 2, device=dev)",
                                    "am.randn(2, device=dev)", "am.uniform(0, 1, 2, device=dev)",
                                    "am.array([1.0, 2.0], device=dev)", "x + 1", "am.dot(m, m)"])
def test_another_thread_runs_while_a_push_waits_under_back_pressure(create):
    # The pusher drives the device (one thread queues a device's ops); the
    # main thread holds it paused with one op queued and a bound of one, so the
    # pusher's next push waits until the block ends. Were the GIL held while
    # it waits, the main thread could not come back from its sleep (the child
    # would hang, and its timeout fail the test).
    r = python(f"""
        import threading, time
        import asyncmlp as am
        dev = am.cpu(3)
        pushed, ready, go, calling = [], threading.Event(), threading.Event(), threading.Event()
        def push():
            x, m = am.ones(2, device=dev), am.ones((2, 2), device=dev)
            am.waitall()
            ready.set()
            go.wait()
            first = am.ones(4, device=dev)  # the one op the bound allows
            calling.set()
            pushed.append({create})
            pushed[0].wait_to_read()
        t = threading.Thread(target=push)
        t.start()
        ready.wait()
        with am.paused(dev):
            am.set_max_pending(1)
            go.set()
            calling.wait()
            time.sleep(0.05)  # the pusher takes the GIL, then waits in its push
            steps = sum(1 for _ in range(100000))  # this thread runs meanwhile
            waited = not pushed
        t.join()
        am.set_max_pending(0)
        print(steps, waited)
        """, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["100000", "True"], r.stdout


FORK_MESSAGE = ("this process is a fork() of one that used asyncmlp, and a device's worker does not survive a fork: "
                "use the library in the parent, or start the child afresh (exec; Python's multiprocessing with the "
                "'spawn' or 'forkserver' start method)")


def test_a_forked_child_raises_one_clear_error_and_the_parent_works_on():
    r = python("""
        import os, sys
        import asyncmlp as am
        a = am.ones((300, 300))
        for _ in range(20):  # products queued as the process forks
            a = am.dot(a, am.ones((300, 300))) * 1e-3
        pid = os.fork()
        if pid == 0:
            for first_use in (lambda: am.ones(2), lambda: a.asnumpy(), am.waitall, lambda: a + 1):
                try:
                    first_use()
                    print("child: worked")
                except RuntimeError as e:
                    print("child:", type(e).__name__, e)
            sys.exit(0)  # the interpreter's own exit, tensors alive
        _, status = os.waitpid(pid, 0)
        print("status", status)
        print("parent", round(float(am.sum(a).item()), 3), am.sum(am.ones((3, 3))).item())
        """, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:4] == ["child: Error " + FORK_MESSAGE] * 4, lines
    assert lines[4] == "status 0"
    assert lines[5].startswith("parent ") and lines[5].endswith(" 9.0"), lines[5]


def test_a_fork_pool_made_while_products_are_queued_leaves_the_parent_working():
    r = python("""
        import multiprocessing as mp
        import asyncmlp as am
        def square(i):
            return i * i
        def use(i):
            try:
                return am.sum(am.ones((2, 2))).item()
            except am.Error as e:
                return str(e)
        if __name__ == "__main__":
            a = am.ones((400, 400))
            for _ in range(20):
                a = am.dot(a, am.ones((400, 400))) * 1e-3
            with mp.get_context("fork").Pool(2) as pool:
                print(pool.map(square, range(4)))
                print(set(pool.map(use, range(2))))
            am.waitall()
            print(a.asnumpy().shape, am.sum(am.ones((2, 2))).item())
        """, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["[0, 1, 4, 9]", repr({FORK_MESSAGE}), "(400, 400) 4.0"], r.stdout
