"""tools/book_cells.py: every code cell of each tab of each edition of the d2l
chapter "Asynchronous Computation" runs over asyncmlp's framework layers
(asyncmlp.mxnet, asyncmlp.torch, asyncmlp.d2l), only its import lines mapped,
and prints what the book's cell prints, in the book's shape (Benchmark lines,
z's threes, the first edition's memory lines); the extractor finds the cells
the book has; bad options are one line and exit 2, a failing cell one line
naming it and exit 1.

The book is data outside the repository: <repo>/../shared/book (or beside the
checkout a local clone came from), or the folder
AMLP_BOOK names. Where it is absent the English and French editions are
skipped, saying where they were looked for; the first edition's cells are
built into the tool and always run (10 batches, not 100, for time: tests/python/test_book_memory.py
measures the experiment)."""
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "book_cells.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import book_cells  # noqa: E402

BOOK = os.environ.get("AMLP_BOOK") or book_cells.DEFAULT_BOOK

FIRST_BATCHES = 10
PAIRS = [(e, t) for e, (_, tabs) in book_cells.EDITIONS.items() for t in tabs]
CELL_COUNTS = {("en", "pytorch"): 6, ("fr", "mxnet"): 7, ("fr", "pytorch"): 4, ("first", "mxnet"): 15}


def needs_book(edition):
    if book_cells.EDITIONS[edition][0] and not os.path.isdir(BOOK):
        pytest.skip(f"the book is not at {BOOK} (it lives outside the repository, in ../shared/book; "
                    "AMLP_BOOK=DIR points at another copy)")


def run(*args, timeout=300):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module", params=PAIRS, ids=["/".join(p) for p in PAIRS])
def ran(request):
    """One (edition, tab) run by the tool, in a process of its own: its cells' records."""
    edition, tab = request.param
    needs_book(edition)
    extra = ["--batches", str(FIRST_BATCHES)] if edition == "first" else []
    r = run("--book", BOOK, "--edition", edition, "--tab", tab, "--json", *extra)
    assert r.returncode == 0, r.stderr
    return edition, tab, json.loads(r.stdout)


def test_every_cell_runs(ran):
    edition, tab, records = ran
    assert len(records) == CELL_COUNTS[(edition, tab)]
    assert all((rec["edition"], rec["tab"]) == (edition, tab) for rec in records)


def benchmark_lines(source, edition):
    """The line each d2l.Benchmark in a cell prints, as a pattern: 'numpy: N.NNNN sec'
    (the first edition's d2lzh: 'synchronous. time: N.NNNN sec')."""
    for desc in re.findall(r"d2l\.Benchmark\((?:'([^']*)')?\)", source):
        if edition == "first":
            yield re.escape(f"{desc} " if desc else "") + r"time: \d+\.\d{4} sec"
        else:
            yield re.escape(desc or "Done") + r": \d+\.\d{4} sec"


def test_the_outputs_have_the_books_shape(ran):
    edition, tab, records = ran
    for rec in records:
        printed = rec["output"]
        for pattern in benchmark_lines(rec["source"], edition):
            assert re.search(f"^{pattern}$", printed, re.M), (rec["label"], pattern, printed)
        if rec["book_output"] is not None:  # the page's own output, its numbers and GPU aside
            assert rec["same_shape"], (rec["label"], printed, rec["book_output"])
        if rec["source"].endswith("\nz"):  # z = x * y + 2, displayed (on a GPU: , device='cuda:0')
            z = {"pytorch": "tensor([[3., 3.]])", "mxnet": "array([[3., 3.]])"}[tab]
            assert book_cells.output_shape(printed) == [z], printed
        if "print('sum =', y)" in rec["source"]:  # MXNet 1.x prints an NDArray with its shape and device
            assert re.match(r"sum = \n\[\S+\]\n<NDArray 1 @cpu\(0\)>\n", printed), printed
        if "increased memory" in rec["source"]:
            assert re.search(r"^increased memory: \d+\.\d{6} MB$", printed, re.M), printed


def test_the_extractor_finds_the_books_cells():
    needs_book("en")
    en = book_cells.load_cells(BOOK, "en", "pytorch")
    assert [c.label for c in en] == [f"In [{n}]" for n in range(1, 7)]
    # In [3] runs on past its first blank line: the page's output shows both Benchmarks.
    assert "d2l.Benchmark('numpy')" in en[2].source and "d2l.Benchmark('torch')" in en[2].source
    assert [c.book_output for c in en] == [None, None, "numpy: 0.6700 sec\ntorch: 0.0172 sec", "Done: 0.1188 sec",
                                           "tensor([[3., 3.]], device='cuda:0')", "tensor([[3., 3.]], device='cuda:0')"]
    fr = {t: book_cells.load_cells(BOOK, "fr", t) for t in ("mxnet", "pytorch")}
    assert all(c.source.startswith(f"#@tab {t}") for t, cells in fr.items() for c in cells)
    assert [len(fr["mxnet"]), len(fr["pytorch"])] == [CELL_COUNTS[("fr", "mxnet")], CELL_COUNTS[("fr", "pytorch")]]


def test_only_the_import_lines_are_mapped():
    cells = book_cells.cells_first()
    if os.path.isdir(BOOK):
        cells += [c for e, t in PAIRS if e != "first" for c in book_cells.load_cells(BOOK, e, t)]
    framework = re.compile(r"^\s*(import|from)\s+(mxnet|torch|d2l|d2lzh)\b", re.M)
    for cell in cells:
        source, mapped = book_cells.map_imports(cell.source)
        assert not framework.search(source), cell.name  # nothing left importing a real framework
        assert len(source.split("\n")) == len(cell.source.split("\n"))
        changed = [(a.strip(), b.strip()) for a, b in zip(cell.source.split("\n"), source.split("\n")) if a != b]
        assert changed == mapped and all(re.match(r"(import|from) ", old) for old, _ in mapped), cell.name
    assert book_cells.map_imports("import torch\nfrom torch import nn\nfrom mxnet.gluon import loss as gloss, nn\n"
                                  "import d2lzh as d2l\nimport numpy, os")[0] == (
        "import asyncmlp.torch as torch\nfrom asyncmlp.torch import nn\n"
        "from asyncmlp.mxnet.gluon import loss as gloss, nn\nfrom asyncmlp.d2l import d2lzh as d2l\nimport numpy, os")


@pytest.mark.parametrize("args,says", [
    (["--edition", "de"], "invalid choice"),
    (["--edition", "en", "--tab", "mxnet"], "has no mxnet tab"),
    (["--edition", "en", "--book", "/nonexistent"], "no readable async-computation.en.txt"),
    (["--edition", "first", "--batches", "0"], "at least 1"),
    (["--edition", "fr", "--batches", "5"], "--batches changes the first edition"),
    (["--frobnicate"], "unrecognized arguments"),
])
def test_a_bad_option_is_one_line_and_exit_2(args, says):
    r = run(*args, timeout=60)
    assert r.returncode == 2 and r.stdout == "", r
    assert len(r.stderr.splitlines()) == 1 and says in r.stderr, r.stderr


def test_a_failing_cell_is_one_line_naming_it_and_exit_1(tmp_path):
    (tmp_path / "async-computation.en.txt").write_text(
        "Prose that introduces the cell, long enough to be prose.\n\n"
        "In [1]:\nimport torch\nx = torch.ones((2, 3))\n\n"
        "In [2]:\ny = x @ x\n\n"
        "In [3]:\nprint('never')\n", encoding="utf-8")
    r = run("--book", str(tmp_path), "--edition", "en", timeout=60)
    assert r.returncode == 1 and "never" not in r.stdout, r
    assert len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith("book_cells.py: en/pytorch In [2] failed (its line 1): ShapeError: "), r.stderr


def test_list_shows_every_cell_without_running_it():
    needs_book("fr")
    r = run("--book", BOOK, "--list", "--json", timeout=60)
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    assert [(c["edition"], c["tab"]) for c in listed] == [p for p in PAIRS for _ in range(CELL_COUNTS[p])]


def test_the_default_book_is_found_beside_a_worktrees_main_checkout(tmp_path):
    """A git worktree elsewhere (no shared/book beside it) reads the book beside
    the checkout whose worktree it is; a folder that is no checkout, <root>/../shared/book."""
    main, elsewhere = tmp_path / "work" / "main", tmp_path / "wt" / "x"
    (tmp_path / "work" / "shared" / "book").mkdir(parents=True)
    main.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "x"], ["worktree", "add", "-q", str(elsewhere)]):
        subprocess.run([*git, "-C", str(main), *args], check=True, capture_output=True)
    assert book_cells.default_book(str(elsewhere)) == str(tmp_path / "work" / "shared" / "book")
    lone = tmp_path / "lone" / "p"
    lone.mkdir(parents=True)
    assert book_cells.default_book(str(lone)) == str(tmp_path / "lone" / "shared" / "book")
