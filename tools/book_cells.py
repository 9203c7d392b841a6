#!/usr/bin/python3
"""The d2l chapter "Asynchronous Computation" run cell by cell over asyncmlp:
every code cell of each tab of each edition, as the book wrote it, only its
import lines mapped onto asyncmlp's framework layers
(`import torch` -> `import asyncmlp.torch as torch`, `from mxnet import np, npx`
-> `from asyncmlp.mxnet import np, npx`, `from d2l import torch as d2l` ->
`from asyncmlp.d2l import torch as d2l`, ...), run in order in one namespace.
For each cell it prints the cell's text, what it printed (Jupyter's display
of a last bare expression included) and, beside it, the book's output where
the book shows one.

  PYTHONPATH=build/python /usr/bin/python3 tools/book_cells.py              # every edition and tab
  ... --edition fr --tab mxnet            # one (edition, tab): in this process
  ... --edition first                     # the first edition's memory experiment, full size
  ... --edition first --batches 30        # the same, 30 batches instead of 100 (the one number changed)
  ... --list                              # the cells, not run
  ... --json                              # the cells and what they printed, as JSON on standard output

Editions (the book's files are in --book, by default <repo>/../shared/book;
their format is the folder's README.md):
  en     async-computation.en.txt, the English rendered page: the pytorch tab.
         A cell is `In [N]:` and the code up to the first blank line; a
         following paragraph that is a block of Python statements (not one bare
         expression, which is how the page shows a result) continues the cell,
         as In [3]'s second Benchmark does (its output shows both). The
         paragraphs after the code, up to the next prose, are the book's output.
  fr     async-computation.fr.md, the French source: the mxnet and pytorch tabs
         (```{.python .input} fences; `#@tab mxnet|pytorch|all`, none = mxnet).
  first  the first edition (MXNet 1.x, nd/gluon), built in: its memory experiment.

Each (edition, tab) runs in a fresh interpreter of its own when several are
chosen (the layers set asyncmlp's allocation policy at import, as each
framework has its own). Exit status: 0 when every cell ran; 1 when a cell
failed (one line on standard error naming it; the cells after it in its tab
do not run); 2 for a bad option or an unreadable book (one line).
"""
import argparse
import ast
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def default_book(root=ROOT):
    """<repo>/../shared/book; for a git worktree, the one beside its main
    checkout; for a clone of a local checkout without one beside it (a CI
    clone), the one beside the checkout it was cloned from."""
    here = os.path.normpath(os.path.join(root, "..", "shared", "book"))
    if os.path.isdir(here):
        return here

    def git(*args):  # what git prints, or "" (no git, no checkout)
        try:
            return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    def checkouts():  # the worktree's main checkout, then the clone's origin: asked in turn
        common = git("rev-parse", "--path-format=absolute", "--git-common-dir")  # <main checkout>/.git
        yield os.path.dirname(common) if common else ""
        origin = git("config", "--get", "remote.origin.url")
        yield origin[len("file://"):] if origin.startswith("file://") else origin

    for checkout in checkouts():
        if checkout and os.path.isdir(checkout):
            there = os.path.normpath(os.path.join(checkout, "..", "shared", "book"))
            if os.path.isdir(there):
                return there
    return here


DEFAULT_BOOK = default_book()
PROG = "book_cells.py"

# edition -> (the book's file, or None when built in; its tabs)
EDITIONS = {
    "en": ("async-computation.en.txt", ["pytorch"]),
    "fr": ("async-computation.fr.md", ["mxnet", "pytorch"]),
    "first": (None, ["mxnet"]),
}

# The first edition's cells (d2l 1st ed., MXNet, "Asynchronous Computation"),
# the memory experiment later editions dropped. The book printed
# 'increased memory: 7.112000 MB' with asscalar() each batch and
# 'increased memory: 198.944000 MB' without.
FIRST_EDITION = [
    ("import d2lzh as d2l\n"
     "from mxnet import autograd, gluon, nd\n"
     "from mxnet.gluon import loss as gloss, nn\n"
     "import os\n"
     "import subprocess\n"
     "import time", None),
    ("with d2l.Benchmark('Workloads are queued.'):\n"
     "    x = nd.random.uniform(shape=(2000, 2000))\n"
     "    y = nd.dot(x, x).sum()", None),
    ("with d2l.Benchmark('Workloads are finished.'):\n"
     "    print('sum =', y)", None),
    ("with d2l.Benchmark():\n"
     "    y = nd.dot(x, x)\n"
     "    y.wait_to_read()", None),
    ("with d2l.Benchmark():\n"
     "    y = nd.dot(x, x)\n"
     "    z = nd.dot(x, x)\n"
     "    nd.waitall()", None),
    ("with d2l.Benchmark():\n"
     "    y = nd.dot(x, x)\n"
     "    y.asnumpy()", None),
    ("with d2l.Benchmark():\n"
     "    y = nd.dot(x, x)\n"
     "    y.norm().asscalar()", None),
    ("with d2l.Benchmark('synchronous.'):\n"
     "    for _ in range(1000):\n"
     "        y = x + 1\n"
     "        y.wait_to_read()", None),
    ("with d2l.Benchmark('asynchronous.'):\n"
     "    for _ in range(1000):\n"
     "        y = x + 1\n"
     "    nd.waitall()", None),
    ("def data_iter():\n"
     "    start = time.time()\n"
     "    num_batches, batch_size = 100, 1024\n"
     "    for i in range(num_batches):\n"
     "        X = nd.random.normal(shape=(batch_size, 512))\n"
     "        y = nd.ones((batch_size,))\n"
     "        yield X, y\n"
     "        if (i + 1) % 50 == 0:\n"
     "            print('batch %d, time %f sec' % (i + 1, time.time() - start))", None),
    ("net = nn.Sequential()\n"
     "net.add(nn.Dense(2048, activation='relu'),\n"
     "        nn.Dense(512, activation='relu'),\n"
     "        nn.Dense(1))\n"
     "net.initialize()\n"
     "trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.005})\n"
     "loss = gloss.L2Loss()", None),
    ("def get_mem():\n"
     "    res = subprocess.check_output(['ps', 'u', '-p', str(os.getpid())])\n"
     "    return int(str(res).split()[15]) / 1e3", None),
    ("for X, y in data_iter():\n"
     "    break\n"
     "loss(y, net(X)).wait_to_read()", None),
    ("l_sum, mem = 0, get_mem()\n"
     "for X, y in data_iter():\n"
     "    with autograd.record():\n"
     "        l = loss(y, net(X))\n"
     "    l_sum += l.mean().asscalar()\n"
     "    l.backward()\n"
     "    trainer.step(X.shape[0])\n"
     "nd.waitall()\n"
     "print('increased memory: %f MB' % (get_mem() - mem))", "increased memory: 7.112000 MB"),
    ("mem = get_mem()\n"
     "for X, y in data_iter():\n"
     "    with autograd.record():\n"
     "        l = loss(y, net(X))\n"
     "    l.backward()\n"
     "    trainer.step(X.shape[0])\n"
     "nd.waitall()\n"
     "print('increased memory: %f MB' % (get_mem() - mem))", "increased memory: 198.944000 MB"),
]
FIRST_EDITION_BATCHES = "num_batches, batch_size = 100, 1024"


class Cell:
    """One code cell: where it is, its text as the book wrote it, the book's output (or None)."""

    def __init__(self, edition, tab, label, source, book_output=None):
        self.edition, self.tab, self.label = edition, tab, label
        self.source, self.book_output = source, book_output

    @property
    def name(self):
        return f"{self.edition}/{self.tab} {self.label}"


# --- the import lines, mapped ------------------------------------------------------
IMPORT_RULES = [
    # the first edition's package: the MXNet stand-in with the first edition's Benchmark
    (re.compile(r"^(\s*)import d2lzh as (\w+)\s*$"), r"\1from asyncmlp.d2l import d2lzh as \2"),
    (re.compile(r"^(\s*)from (mxnet|torch|d2l)((?:\.\w+)*) import "), r"\1from asyncmlp.\2\3 import "),
    (re.compile(r"^(\s*)import (mxnet|torch)((?:\.\w+)*) as (\w+)\s*$"), r"\1import asyncmlp.\2\3 as \4"),
    (re.compile(r"^(\s*)import (mxnet|torch)\s*$"), r"\1import asyncmlp.\2 as \2"),
]


def map_imports(source):
    """The cell with its framework import lines mapped onto asyncmlp; and the (old, new) pairs."""
    out, mapped = [], []
    for line in source.split("\n"):
        new = line
        for pattern, repl in IMPORT_RULES:
            if pattern.match(line):
                new = pattern.sub(repl, line)
                break
        if new != line:
            mapped.append((line.strip(), new.strip()))
        out.append(new)
    return "\n".join(out), mapped


# --- extraction -----------------------------------------------------------------
def _paragraph(lines, i):
    """The lines from i up to the next blank line, and the index after them."""
    j = i
    while j < len(lines) and lines[j].strip():
        j += 1
    return lines[i:j], j


def _skip_blank(lines, i):
    while i < len(lines) and not lines[i].strip():
        i += 1
    return i


def _statements(block):
    """Whether a paragraph is Python statements (a cell's code), not one bare expression (a shown result)."""
    try:
        body = ast.parse("\n".join(block)).body
    except SyntaxError:
        return False
    return bool(body) and not (len(body) == 1 and isinstance(body[0], ast.Expr))


def _prose(block):
    """Whether a paragraph is the page's prose: a heading or a line of sentence length."""
    return block[0].lstrip().startswith("#") or any(len(line.split()) >= 8 for line in block)


CELL_START = re.compile(r"^In \[(\d+)\]:\s*$")


def cells_en(text):
    """The English page's cells (the pytorch tab), each with the output the page shows."""
    lines, cells, i = text.split("\n"), [], 0
    while i < len(lines):
        m = CELL_START.match(lines[i])
        if not m:
            i += 1
            continue
        code, i = _paragraph(lines, i + 1)
        while True:  # a paragraph of statements right after continues the cell (In [3])
            j = _skip_blank(lines, i)
            block, k = _paragraph(lines, j)
            if not block or CELL_START.match(block[0]) or not _statements(block):
                break
            code, i = code + [""] + block, k
        output = []
        while True:  # what follows up to the next prose or cell is the page's output
            j = _skip_blank(lines, i)
            block, k = _paragraph(lines, j)
            if not block or CELL_START.match(block[0]) or _prose(block):
                break
            output, i = output + block, k
        cells.append(Cell("en", "pytorch", f"In [{m.group(1)}]", "\n".join(code), "\n".join(output) or None))
    return cells


FENCE = re.compile(r"^```\{\.python \.input\}\s*$")
TAB = re.compile(r"^#@tab\s+(.+?)\s*$")


def cells_fr(text, tab):
    """The French source's cells of one tab (`#@tab all` cells belong to every tab; none: mxnet)."""
    lines, cells, i = text.split("\n"), [], 0
    while i < len(lines):
        if not FENCE.match(lines[i]):
            i += 1
            continue
        start, j = i + 1, i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        body = lines[start:j]
        m = TAB.match(body[0]) if body else None
        tabs = {t.strip() for t in m.group(1).split(",")} if m else {"mxnet"}
        if tab in tabs or "all" in tabs:
            cells.append(Cell("fr", tab, f"cell {len(cells) + 1} (line {start + 1})", "\n".join(body).strip("\n")))
        i = j + 1
    return cells


def cells_first(batches=None):
    """The first edition's built-in cells; `batches` replaces the data iterator's 100 batches."""
    cells = []
    for n, (source, output) in enumerate(FIRST_EDITION, 1):
        if batches is not None and FIRST_EDITION_BATCHES in source:
            source = source.replace(FIRST_EDITION_BATCHES, f"num_batches, batch_size = {batches}, 1024")
        cells.append(Cell("first", "mxnet", f"cell {n}", source, output))
    return cells


def load_cells(book, edition, tab, batches=None):
    """The cells of one (edition, tab)."""
    if edition == "first":
        return cells_first(batches)
    with open(os.path.join(book, EDITIONS[edition][0]), encoding="utf-8") as f:
        text = f.read()
    return cells_en(text) if edition == "en" else cells_fr(text, tab)


# --- the book's output against ours ---------------------------------------------------
def output_shape(text):
    """A printed output with its measured numbers and the book's GPU device left out:
    'numpy: 0.6700 sec' -> 'numpy: <n> sec'; "tensor([[3., 3.]], device='cuda:0')" -> 'tensor([[3., 3.]])'."""
    text = re.sub(r", device='cuda:\d+'", "", text)
    text = re.sub(r"\d+\.\d+(?= sec\b| MB\b)", "<n>", text)
    return [line.rstrip() for line in text.strip("\n").split("\n")]


def same_shape(printed, book):
    """Whether every line the book shows has a line of the same shape in what the cell printed."""
    ours = set(output_shape(printed))
    return all(line in ours for line in output_shape(book))


# --- running ------------------------------------------------------------------------
class Tee(io.TextIOBase):
    """Writes to a buffer and, when given one, to a stream as it goes."""

    def __init__(self, stream):
        self.stream, self.buffer = stream, io.StringIO()

    def write(self, s):
        self.buffer.write(s)
        if self.stream is not None:
            self.stream.write(s)
            self.stream.flush()
        return len(s)


def run_cell(cell, source, namespace):
    """Run one cell in the namespace, displaying its last bare expression as Jupyter does."""
    filename = f"<{cell.name}>"
    tree = ast.parse(source, filename)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, filename, "exec"), namespace)
    if last is not None:
        value = eval(compile(ast.Expression(last.value), filename, "eval"), namespace)
        if value is not None:
            print(repr(value))


class CellFailed(Exception):
    pass


def _where(exc, cell):
    """' (its line N)' for the cell's line the exception came through, when there is one."""
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == f"<{cell.name}>"]
    return f" (its line {lines[-1]})" if lines else ""


def run_tab(cells, show):
    """Run the cells in order in one namespace; each cell's record. `show`: print as it goes."""
    namespace = {"__name__": "__main__"}
    records = []
    for cell in cells:
        source, mapped = map_imports(cell.source)
        if show:
            print(f"\n== {cell.name} ==")
            print(cell.source)
            for old, new in mapped:
                print(f"# mapped: {old}  ->  {new}")
            print("-- printed:", flush=True)
        tee = Tee(sys.stdout if show else None)
        t0 = time.perf_counter()
        try:
            with contextlib.redirect_stdout(tee):
                run_cell(cell, source, namespace)
        except BrokenPipeError:  # our standard output, not the cell
            raise
        except Exception as e:  # the cell's own error, named with the cell
            first = (str(e).strip().split("\n") or [""])[0]
            raise CellFailed(f"{cell.name} failed{_where(e, cell)}: {type(e).__name__}: {first}") from e
        printed = tee.buffer.getvalue()
        record = {"edition": cell.edition, "tab": cell.tab, "label": cell.label, "source": cell.source,
                  "mapped": mapped, "output": printed, "book_output": cell.book_output,
                  "seconds": time.perf_counter() - t0}
        if cell.book_output is not None:
            record["same_shape"] = same_shape(printed, cell.book_output)
        records.append(record)
        if show and cell.book_output is not None:
            print("-- the book printed:")
            print(cell.book_output)
            print(f"-- same shape as the book's: {'yes' if record['same_shape'] else 'NO'}")
    return records


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        sys.stderr.write(f"{self.prog}: {message} (try --help)\n")
        sys.exit(2)


def parse_args(argv):
    p = OneLineParser(prog=PROG, description=__doc__.split("\n")[0],
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--book", default=DEFAULT_BOOK, help="the book's folder (default: %(default)s)")
    p.add_argument("--edition", choices=sorted(EDITIONS), help="one edition (default: every one)")
    p.add_argument("--tab", choices=["mxnet", "pytorch"], help="one tab (default: every one the edition has)")
    p.add_argument("--batches", type=int, help="the first edition's data iterator: this many batches, not 100")
    p.add_argument("--list", action="store_true", help="list the cells, do not run them")
    p.add_argument("--json", action="store_true", help="JSON on standard output: the cells (and what they printed)")
    args = p.parse_args(argv)
    pairs = [(e, t) for e in ([args.edition] if args.edition else EDITIONS) for t in EDITIONS[e][1]
             if args.tab in (None, t)]
    if not pairs:
        p.error(f"edition {args.edition} has no {args.tab} tab (it has: {', '.join(EDITIONS[args.edition][1])})")
    if args.batches is not None:
        if args.batches < 1:
            p.error(f"--batches must be at least 1 (got {args.batches})")
        if all(e != "first" for e, _ in pairs):
            p.error("--batches changes the first edition's data iterator: use it with --edition first")
    if any(EDITIONS[e][0] for e, _ in pairs):
        for e, _ in pairs:
            path = os.path.join(args.book, EDITIONS[e][0]) if EDITIONS[e][0] else None
            if path and not os.access(path, os.R_OK):
                p.error(f"--book {args.book}: no readable {EDITIONS[e][0]} there")
    return args, pairs


def main(argv):
    args, pairs = parse_args(argv)
    if args.list:
        listed = []
        for e, t in pairs:
            for cell in load_cells(args.book, e, t, args.batches):
                source, mapped = map_imports(cell.source)
                listed.append({"edition": e, "tab": t, "label": cell.label, "source": cell.source,
                               "run": source, "mapped": mapped, "book_output": cell.book_output})
                if not args.json:
                    print(f"{cell.name}: {cell.source.split(chr(10))[0]}")
        if args.json:
            json.dump(listed, sys.stdout, indent=1)
            print()
        return 0
    if len(pairs) == 1:  # one (edition, tab): here, in this interpreter
        e, t = pairs[0]
        try:
            records = run_tab(load_cells(args.book, e, t, args.batches), show=not args.json)
        except CellFailed as failed:
            sys.stdout.flush()
            sys.stderr.write(f"{PROG}: {failed}\n")
            return 1
        if not args.json:
            shown = [r for r in records if r["book_output"] is not None]
            print(f"\n== {e}/{t}: {len(records)} cells ran; the book shows the output of {len(shown)}, "
                  f"{sum(r['same_shape'] for r in shown)} of them of the same shape here")
        if args.json:
            json.dump(records, sys.stdout, indent=1)
            print()
        return 0
    # several: each in a fresh interpreter (each framework layer sets asyncmlp's policy at import)
    records, status = [], 0
    for e, t in pairs:
        cmd = [sys.executable, os.path.abspath(__file__), "--book", args.book, "--edition", e, "--tab", t]
        if args.batches is not None and e == "first":
            cmd += ["--batches", str(args.batches)]
        if args.json:
            r = subprocess.run(cmd + ["--json"], stdout=subprocess.PIPE, text=True)
            if r.returncode == 0:
                records += json.loads(r.stdout)
        else:
            sys.stdout.flush()
            r = subprocess.run(cmd)
        status = max(status, r.returncode)
    if args.json:
        json.dump(records, sys.stdout, indent=1)
        print()
    return status


if __name__ == "__main__":
    try:
        status = main(sys.argv[1:])
        sys.stdout.flush()
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        status = 130
    except BrokenPipeError:  # standard output's reader went away (| head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.stderr.write(f"{PROG}: standard output was closed\n")
        status = 1
    sys.exit(status)
