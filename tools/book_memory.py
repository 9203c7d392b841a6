#!/usr/bin/python3
"""The first edition's memory experiment over asyncmlp's framework layers:
its cells (tools/book_cells.py's list) run as the book wrote them under
asyncmlp.mxnet (MXNet's semantics: an output gets memory when its op runs,
the data drawn ahead on a queue of its own), reading the loss each batch and
never; then the same loop as PyTorch code under asyncmlp.torch (PyTorch's
caching allocator). Growth is tracked bytes (the peak in use during the loop
minus the bytes in use at its start) and RSS, beside what the book's cell
printed from `ps` and the book's own figures.

  PYTHONPATH=build/python /usr/bin/python3 tools/book_memory.py            # 100 batches, the book's
  ... --batches 30 --json > figures.json      # the figures as JSON (the text on stderr)
  ... --markdown < figures.json               # docs/python.md's table from them

Exit status: 0; 2 for a bad option or --markdown input that is not --json's
(one line); 1 for a failed run or standard output that took no write.
"""
import argparse
import contextlib
import io
import json
import os
import re
import sys

import asyncmlp as am

_POLICY = am.alloc()  # each layer sets its framework's policy at import: callers keep theirs
import asyncmlp.mxnet as mx  # noqa: E402
import asyncmlp.torch as torch  # noqa: E402
from asyncmlp.torch import nn  # noqa: E402

am.set_alloc(_POLICY)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import book_cells  # noqa: E402  (the first edition's cells, and how a cell is run)

PROG = "book_memory.py"
DEV = am.cpu()
MB = 1e6  # the book's unit (ps gives KiB; the book divides by 1e3)
BATCH, FEATURES = 1024, 512
BATCH_DATA_BYTES = BATCH * FEATURES * 4 + BATCH * 4  # X (1024, 512) and y (1024,): 2.1 MB
BOOK_MB = {"asscalar": 7.112, "none": 198.944}  # the book's `increased memory`, 100 batches
MARKDOWN_INPUT_LIMIT = 1 << 20


class Growth:
    """Tracked bytes over a stretch of the program: peak and end minus start; RSS likewise."""

    def __str__(self):
        return (f"peak +{self.peak / MB:.1f} MB, end +{self.end / MB:.1f} MB tracked; "
                f"RSS +{self.rss / MB:.1f} MB")

    def figures(self):
        return {"peak_bytes": self.peak, "end_bytes": self.end, "rss_bytes": self.rss}


@contextlib.contextmanager
def measured():
    """Growth of the CPU pool's bytes in use across the block (everything queued before it has run)."""
    am.waitall()
    am.reset_peaks(DEV)
    g = Growth()
    start, rss = am.memory_stats(DEV)["bytes_in_use"], am.process_rss_bytes()
    yield g
    am.waitall()
    s = am.memory_stats(DEV)
    g.peak, g.end, g.rss = s["peak_bytes"] - start, s["bytes_in_use"] - start, am.process_rss_bytes() - rss


def first_edition(batches):
    """The first edition's cells (imports, data_iter, the net, get_mem, the one-batch
    warm-up, then the loop reading the loss each batch and the loop that never does)
    run as the book wrote them, `batches` batches each. Returns the two loops'
    Growth, each with the book's own figure (`increased memory`, from ps) as .book."""
    am.set_alloc(mx.ALLOC)
    namespace = {"__name__": "__main__"}
    loops = []

    def run(cell):
        source, _ = book_cells.map_imports(cell.source)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            book_cells.run_cell(cell, source, namespace)
        return out.getvalue()

    for cell in book_cells.cells_first(batches):
        if "Benchmark" in cell.source:
            continue  # the microbenchmarks: no part of the experiment
        if "increased memory" not in cell.source:
            run(cell)
            continue
        with measured() as g:
            printed = run(cell)
        g.book = float(re.search(r"increased memory: (\S+) MB", printed).group(1))
        loops.append(g)
    assert len(loops) == 2
    return loops  # [with asscalar() each batch, without a blocker]


def torch_form(batches, sync):
    """The same experiment as PyTorch code: the loss read each batch (sync) or never."""
    am.set_alloc(torch.ALLOC)

    def data_iter():
        for _ in range(batches):
            yield torch.randn(size=(BATCH, FEATURES)), torch.ones((BATCH, 1))

    net = nn.Sequential(nn.Linear(FEATURES, 2048), nn.ReLU(), nn.Linear(2048, 512), nn.ReLU(), nn.Linear(512, 1))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.005)
    loss = nn.MSELoss()
    for X, y in data_iter():
        break
    loss(net(X), y).item()
    del X, y
    with measured() as g:
        l_sum = 0
        for X, y in data_iter():
            optimizer.zero_grad()
            l = loss(net(X), y)
            if sync:
                l_sum += l.item()
            l.backward()
            optimizer.step()
        torch.cuda.synchronize()
    return g


def running(synced):
    """What a batch holds only while it runs (its activations and their gradients): the
    synchronized loop's peak less what stays after it (the weights' gradients, the last batch)."""
    return synced.peak - synced.end


def experiment(batches):
    """Both forms, both loops: the figures (a dict, --json's) and their text."""
    policy = am.alloc()
    try:
        synced, unsynced = first_edition(batches)
        t_synced, t_unsynced = torch_form(batches, True), torch_form(batches, False)
    finally:
        am.set_alloc(policy)
    backlog = batches * BATCH_DATA_BYTES
    f = {"batches": batches, "batch_size": BATCH, "features": FEATURES, "batch_data_bytes": BATCH_DATA_BYTES,
         "data_bytes": backlog, "running_batch_bytes": running(synced), "book_mb": BOOK_MB,
         "mxnet": {"asscalar": dict(synced.figures(), printed_mb=synced.book),
                   "none": dict(unsynced.figures(), printed_mb=unsynced.book)},
         "torch": {"item": t_synced.figures(), "none": t_unsynced.figures()}}
    lines = [f"first edition, asyncmlp.mxnet ({mx.ALLOC}), {batches} batches of {BATCH} x {FEATURES}:",
             f"  asscalar() each batch: {synced}; the cell printed increased memory {synced.book:.3f} MB"
             f" (book: {BOOK_MB['asscalar']})",
             f"  no blocker:            {unsynced}; the cell printed increased memory {unsynced.book:.3f} MB"
             f" (book: {BOOK_MB['none']} for 100)",
             f"  no blocker less what a running batch holds: +{(unsynced.peak - running(synced)) / MB:.1f} MB;"
             f" {batches} batches' data: {backlog / MB:.1f} MB",
             f"the same loop in asyncmlp.torch's form ({torch.ALLOC}):",
             f"  item() each batch: {t_synced}",
             f"  no blocker:        {t_unsynced}"]
    return f, "\n".join(lines)


def markdown_table(f):
    """docs/python.md's table of the experiment, from --json's figures."""
    n, data = f["batches"], f["data_bytes"]
    m, t = f["mxnet"], f["torch"]

    def mb(b):
        return f"{b / MB:+.1f} MB"

    rows = [
        ("asyncmlp.mxnet, `asscalar()` each batch", mb(m["asscalar"]["peak_bytes"]), mb(m["asscalar"]["end_bytes"]),
         mb(m["asscalar"]["rss_bytes"]), f"{m['asscalar']['printed_mb']:.3f} MB", f"{f['book_mb']['asscalar']} MB"),
        ("asyncmlp.mxnet, no blocker", mb(m["none"]["peak_bytes"]), mb(m["none"]["end_bytes"]),
         mb(m["none"]["rss_bytes"]), f"{m['none']['printed_mb']:.3f} MB", f"{f['book_mb']['none']} MB"),
        ("asyncmlp.torch, `item()` each batch", mb(t["item"]["peak_bytes"]), mb(t["item"]["end_bytes"]),
         mb(t["item"]["rss_bytes"]), "", ""),
        ("asyncmlp.torch, no blocker", mb(t["none"]["peak_bytes"]), mb(t["none"]["end_bytes"]),
         mb(t["none"]["rss_bytes"]), "", ""),
    ]
    head = (f"`tools/book_memory.py --batches {n}`: {n} batches of {f['batch_size']} × {f['features']}; "
            f"{n} batches' data {data / MB:.1f} MB ({f['batch_data_bytes'] / MB:.2f} MB a batch); no blocker "
            f"against it: {m['none']['peak_bytes'] / data:.3f}×.\n\n")
    table = ["| loop | tracked peak | tracked at the end | RSS | the cell printed (`ps`) | the book |",
             "|---|---|---|---|---|---|"]
    table += ["| " + " | ".join(r) + " |" for r in rows]
    return head + "\n".join(table) + "\n"


def main(argv):
    p = book_cells.OneLineParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batches", type=int, help="the data iterator's batches (default: the book's 100)")
    p.add_argument("--json", action="store_true", help="the figures as JSON on standard output (the text on stderr)")
    p.add_argument("--markdown", action="store_true", help="docs/python.md's table from --json's figures on stdin")
    args = p.parse_args(argv)
    if args.markdown:
        if args.json or args.batches is not None:
            p.error("--markdown takes no other option")
        text = sys.stdin.read(MARKDOWN_INPUT_LIMIT + 1)
        try:
            if len(text) > MARKDOWN_INPUT_LIMIT:
                raise ValueError(f"over {MARKDOWN_INPUT_LIMIT >> 20} MiB")
            table = markdown_table(json.loads(text))
        except (ValueError, KeyError, TypeError, AttributeError, ZeroDivisionError) as e:
            p.error(f"--markdown: standard input is not the JSON of --json ({e!r})")
        sys.stdout.write(table)
        return 0
    batches = 100 if args.batches is None else args.batches
    if batches < 1:
        p.error(f"--batches must be at least 1 (got {batches})")
    figures, text = experiment(batches)
    if args.json:
        sys.stderr.write(text + "\n")
        json.dump(figures, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(text)
        print(f"no blocker against {batches} batches' data: "
              f"{figures['mxnet']['none']['peak_bytes'] / figures['data_bytes'] - 1:+.1%}")
    return 0


if __name__ == "__main__":
    if sys.stdout is None:
        sys.stderr.write(f"{PROG}: standard output is closed\n")
        sys.exit(1)
    try:
        rc = main(sys.argv[1:])
        sys.stdout.flush()
        sys.exit(rc)
    except am.Error as e:
        sys.stderr.write(f"{PROG}: {e}\n")
        sys.exit(1)
    except OSError as e:
        sys.stderr.write(f"{PROG}: standard output: {e.strerror or e}\n")
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
