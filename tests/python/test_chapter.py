"""examples/chapter.py: every section runs and prints the book's lines; its
models account for what it measured where the accounting does not depend
on the machine's speed (the memory a queued batch holds); bad options are
one line and exit 2; and docs/python.md's measured table is the one its
figures (docs/python_cpu.json, a run of chapter.py --json) render, with
the figures the page's prose quotes among them and the machine-independent
ones (a batch's ops and bytes at the book's sizes) equal to a live run's.
No figure of time is asserted: the machine may be loaded."""
import json
import math
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHAPTER = os.path.join(ROOT, "examples", "chapter.py")
sys.path.insert(0, os.path.join(ROOT, "examples"))
import chapter  # noqa: E402  (the renderer of the doc's table)


def run(*args, stdin=None):
    return subprocess.run([sys.executable, CHAPTER, *args], capture_output=True, text=True, input=stdin,
                          timeout=600)


@pytest.fixture(scope="module")
def quick():
    r = run("--device", "cpu", "--quick", "--json")
    assert r.returncode == 0, r.stderr
    return r.stderr, json.loads(r.stdout)


def test_every_section_runs_and_prints_the_books_lines(quick):
    text, figures = quick
    assert figures["sections"] == chapter.SECTIONS
    for name in chapter.SECTIONS:
        assert f"== {name}:" in text
    for line in (r"^numpy: \d+\.\d{4} sec$", r"^asyncmlp: \d+\.\d{4} sec$", r"^Done: \d+\.\d{4} sec$",
                 r"^Tensor\(1, 2\) on cpu:0 \[3, 3\]$", r"^waitall: \d+\.\d{4} sec$", r"^wait_to_read: ",
                 r"^numpy conversion: ", r"^scalar conversion: ", r"^synchronous: \d+\.\d{4} sec$",
                 r"^asynchronous: \d+\.\d{4} sec$", r"^batch 10, time \d+\.\d{4} sec$",
                 r"^time per epoch: \d+\.\d{4} sec$", r"^increased memory: \d+\.\d+ MB$",
                 r"^Exercise 1 \(MXNet tab\)\. .*N t2 > \(N-1\) t1", r"^Exercise 2 \(MXNet tab\)\. .*waitall",
                 r"^Exercise 3 \(PyTorch tab\)\. On the CPU"):
        assert re.search(line, text, re.M), line
    assert figures["asynchrony"]["z"] == [[3.0, 3.0]]


def test_the_training_loops_memory_is_a_batch_per_batch_queued(quick):
    _, figures = quick
    batch, none, stream = figures["training"]["runs"]
    assert (batch["mode"], none["mode"], stream["mode"]) == ("batch", "none", "stream")
    assert (batch["alloc"], none["alloc"], stream["alloc"]) == ("enqueue", "enqueue", "stream")
    per = batch["bytes_per_batch"]
    assert 0 < none["bytes_per_batch"] < per  # batch also reads each loss
    assert none["ops_per_batch"] < batch["ops_per_batch"]
    for r in (batch, none):
        assert r["ops_per_batch"] == int(r["ops_per_batch"]) and r["bytes_per_batch"] == int(r["bytes_per_batch"])
    # Reading the loss each batch holds one batch's memory at a time ...
    assert batch["tracked_growth_bytes"] <= 1.05 * per
    # ... and never reading it holds a batch for every batch still queued.
    assert 1 <= none["queued_batches"] <= figures["training"]["batches"]
    assert 0.9 <= none["tracked_growth_bytes"] / none["model_growth_bytes"] <= 1.1
    # Under stream the same loop holds one batch's blocks, however many are queued.
    assert stream["held_batches"] == 1 and stream["model_growth_bytes"] == stream["bytes_per_batch"]
    assert 0.9 <= stream["tracked_growth_bytes"] / stream["model_growth_bytes"] <= 1.1
    for r in (batch, none, stream):
        assert r["h_s"] > 0 and r["d_s"] > 0 and r["wall_s"] > 0


def test_the_models_are_the_books(quick):
    _, f = quick
    v = f["sync_vs_async"]
    n = v["ops"]
    assert v["model_synced_s"] == pytest.approx(n * (v["t1_s"] + v["t2_s"] + v["t3_s"]))
    t1 = v["t1_beside_worker_s"]
    assert v["model_async_s"] == pytest.approx(n * max(t1, v["t2_s"]) + min(t1, v["t2_s"]) + v["t3_s"])
    assert 0 <= v["wakes"] <= n
    for r in f["training"]["runs"]:
        h, d, nb = r["h_s"], r["d_s"], r["batches"]
        want = nb * (h + d) if r["mode"] == "batch" else nb * max(h, d) + min(h, d)
        assert r["model_wall_s"] == pytest.approx(want)


def test_the_exercises_models_are_their_measured_parts(quick):
    _, f = quick
    e = f["exercises"]
    assert e["alloc"] == "stream"  # the module's default: exercise 3's import of asyncmlp.torch changed nothing
    cheap, expensive = e["formula"]
    assert (cheap["case"], cheap["shape"]) == ("cheap", [1, 2])
    assert (expensive["case"], expensive["shape"]) == ("expensive", [200, 200])  # --quick's --size
    for c in (cheap, expensive):
        n, t1, t2, t3 = c["ops"], c["t1_s"], c["t2_s"], c["t3_s"]
        assert n == 200 and min(t1, t2, c["async_s"]) > 0 and t3 >= 0
        assert c["frontend_model_s"] == pytest.approx(n * t1 + t2 + t3)
        assert c["backend_model_s"] == pytest.approx(t1 + n * t2 + t3)
        assert c["n_t2_s"] == pytest.approx(n * t2) and c["n_minus_1_t1_s"] == pytest.approx((n - 1) * t1)
        assert c["backend_bound"] == (n * t2 > (n - 1) * t1)
        # the fit is the model nearer the measurement
        near = {k: abs(math.log(c["async_s"] / c[k + "_model_s"])) for k in ("frontend", "backend")}
        assert c["matches"] == min(near, key=near.get)
    w = e["wait"]
    assert (w["device"], w["other"], w["dots"]) == ("cpu:0", "cpu:1", chapter.EXERCISE_DOTS)
    assert w["wait_to_read_model_s"] == pytest.approx(w["pushes_s"] + w["round_trip_other_s"])
    assert w["waitall_model_s"] == pytest.approx(w["device_s"] + w["t3_s"])
    assert w["same_queue_model_s"] == pytest.approx(w["device_s"] + w["t3_s"])
    assert 0 <= w["dots_left_at_return"] <= w["dots"]
    # held still, the dots cannot run: wait_to_read on the other queue returned all the same
    assert w["dots_held_paused"] == w["dots"]
    c = e["cpu"]
    assert (c["device"], c["iterations"]) == ("cpu:0", chapter.EXERCISE_ITERATIONS)
    for mode in ("async", "blocking"):
        assert 0 < c[mode + "_queued_s"] <= c[mode + "_done_s"]
        assert c[mode + "_done_model_s"] == pytest.approx(c[mode + "_device_s"] + c["t3_s"])


@pytest.fixture(scope="module")
def exercises_at_the_books_size():
    """The exercises with 1000 x 1000 matrices: each exercise's work takes the
    device 50 ms or more, so their conclusions' direction shows on a loaded machine."""
    r = run("--device", "cpu", "--sections", "exercises", "--size", "1000", "--ops", "200", "--reps", "1", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["exercises"]


def test_the_exercises_conclusions(exercises_at_the_books_size):
    e = exercises_at_the_books_size
    cheap, expensive = e["formula"]
    # 1. An add of a million floats outlasts Python's call many times over: the
    # backend sets the pace and t1 + N t2 + t3 is the fit; a 1x2 add is the cheaper op.
    assert expensive["t2_s"] > expensive["t1_s"] and expensive["backend_bound"]
    assert expensive["matches"] == "backend"
    assert cheap["t2_s"] < expensive["t2_s"]
    # 2. wait_to_read on the other queue's small op returns before waitall,
    # which waits for the dots (5 x dot(1000^2), over 50 ms)
    w = e["wait"]
    assert w["device_s"] >= 0.05
    assert w["wait_to_read_s"] < w["waitall_s"]
    # 3. On the CPU the loop returns before its work (over 50 ms) is done.
    c = e["cpu"]
    assert c["async_device_s"] >= 0.05
    assert c["async_queued_s"] < c["async_device_s"] <= c["async_done_s"] + 0.01


@pytest.mark.parametrize("args,words", [
    (["--sections", "bogus"], "unknown section 'bogus'"),
    (["--device", "tpu"], "--device tpu"),
    (["--batches", "0"], "--batches must be at least 1"),
    (["--hidden", "2048,x"], "--hidden"),
    (["--no-such-option"], "unrecognized arguments"),
])
def test_a_bad_option_is_one_line_and_exit_2(args, words):
    r = run(*args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stdout == "" and r.stderr.count("\n") == 1 and words in r.stderr, r.stderr


def test_markdown_reads_json_or_says_why():
    r = run("--markdown", stdin="not json")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--markdown" in r.stderr
    r = run("--markdown", "--quick")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    r = run("--markdown", stdin="{}")  # JSON, but not --json's
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "'device'" in r.stderr, r.stderr
    with open("/dev/zero", "rb") as zero:  # endless: refused after 16 MiB, not read for ever
        r = subprocess.run([sys.executable, CHAPTER, "--markdown"], stdin=zero, capture_output=True, text=True,
                           timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "over 16 MiB" in r.stderr, r.stderr


def markdown_into(stdout, preexec_fn=None):
    """--markdown of the doc's figures with standard output as given, started as
    a shell starts it (subprocess restores SIGPIPE and SIGXFSZ to their defaults)."""
    with open(os.path.join(ROOT, "docs", "python_cpu.json"), "rb") as figures:
        return subprocess.run([sys.executable, CHAPTER, "--markdown"], stdin=figures, stdout=stdout,
                              stderr=subprocess.PIPE, text=True, timeout=120, preexec_fn=preexec_fn)


def test_standard_output_that_takes_no_write_is_one_line_and_exit_1(tmp_path):
    import resource
    read_end, write_end = os.pipe()
    os.close(read_end)  # its reader is gone
    try:
        r = markdown_into(write_end)
    finally:
        os.close(write_end)
    assert r.returncode == 1 and r.stderr == "chapter.py: standard output: Broken pipe\n", r.stderr
    with open("/dev/full", "w") as full:
        r = markdown_into(full)
    assert r.returncode == 1 and r.stderr == "chapter.py: standard output: No space left on device\n", r.stderr
    with open(tmp_path / "table.md", "w") as f:  # past `ulimit -f`: an error, not a kill by SIGXFSZ
        r = markdown_into(f, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0)))
    assert r.returncode == 1 and r.stderr == "chapter.py: standard output: File too large\n", r.stderr
    r = markdown_into(subprocess.DEVNULL, preexec_fn=lambda: os.close(1))
    assert r.returncode == 1 and r.stderr == "chapter.py: standard output is closed\n", r.stderr


# --- docs/python.md ----------------------------------------------------------------
BEGIN = "<!-- measured: examples/chapter.py --json > docs/python_cpu.json, then --markdown < it; not by hand -->"
END = "<!-- end of the measured table -->"
# The page's other generated table: the first edition's memory experiment (test_book_memory.py).
BOOK_BEGIN = "<!-- book memory: tools/book_memory.py --json > docs/book_memory_cpu.json, then --markdown < it; not by hand -->"
BOOK_END = "<!-- end of the book memory table -->"


def doc_parts():
    with open(os.path.join(ROOT, "docs", "python.md"), encoding="utf-8") as f:
        page = f.read()
    with open(os.path.join(ROOT, "docs", "python_cpu.json"), encoding="utf-8") as f:
        figures = json.load(f)
    assert page.count(BEGIN) == 1 and page.count(END) == 1
    head, rest = page.split(BEGIN)
    block, tail = rest.split(END)
    return head + tail, block, figures


def test_the_docs_table_is_the_one_its_figures_render():
    _, block, figures = doc_parts()
    assert block.strip("\n") == chapter.markdown_table(figures).strip("\n")
    assert figures["sections"] == chapter.SECTIONS


def test_every_figure_the_docs_prose_quotes_is_in_its_table():
    prose, block, _ = doc_parts()
    head, rest = prose.split(BOOK_BEGIN)
    book_block, tail = rest.split(BOOK_END)
    prose, block = head + tail, block + book_block
    prose = re.sub(r"```.*?```", "", prose, flags=re.S)  # code is not a figure
    quoted = re.findall(r"(?<![\w.])(\d+\.\d+) ?(µs|ms|s|MB|×)", prose)
    assert quoted, "the page quotes no measured figure"
    for number, unit in quoted:
        sep = "" if unit == "×" else " "
        assert f"{number}{sep}{unit}" in block, f"{number} {unit}: not in the measured tables"


def test_the_docs_machine_independent_figures_are_a_live_runs():
    _, _, figures = doc_parts()
    t = figures["training"]
    r = run("--device", "cpu", "--sections", "training", "--batches", "2", "--batch-size", str(t["batch_size"]),
            "--features", str(t["features"]), "--hidden", ",".join(map(str, t["hidden"])), "--json")
    assert r.returncode == 0, r.stderr
    live = json.loads(r.stdout)["training"]["runs"]
    for doc_run, live_run in zip(t["runs"], live):
        assert doc_run["ops_per_batch"] == live_run["ops_per_batch"]
        assert doc_run["bytes_per_batch"] == live_run["bytes_per_batch"]
