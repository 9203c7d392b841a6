#!/usr/bin/env python3
"""plot_memory.py — draw train_mlp's memory logs with matplotlib (PNG or SVG).

    train_mlp --config configs/quick.ini --compare \\
        --memory-log out/memory.csv --summary-json out/summary.json
    python3 tools/plot_memory.py out/memory*.csv out/summary.json -o out/memory.svg   # or .png

Needs matplotlib 3.6 or newer (Debian 12: python3-matplotlib); run by a python3 that
lacks it, the script runs itself again with /usr/bin/python3.

Inputs, by extension:
  *.csv   memory logs (--memory-log; one per mode with --compare: memory.batch.csv,
          memory.none.csv, memory.every10.csv, memory.bounded.csv ...; one per rank with
          --distributed mpi: memory.rank0.csv, memory.rank1.csv, each a line of its own).
          The mode and the rank are read from the file name.
  *.json  summaries (--summary-json): one object per run, or a list of them (with --sweep,
          the "runs" list: tools/plot_sweep.py draws the sweep itself).

Panels (each drawn when its data is there):
  1. tracked bytes in use over wall time, one line per memory log, sampled when
     each batch has been queued; the summary's end point (after waitall) joined
     by a dashed line: the queue draining what was queued. Log scale when the
     modes' peaks differ by more than 20x.
  2. memory increase (log scale) against samples/s, one point per run, each
     labelled with its throughput against batch's (e.g. "none  1.90x"); the
     sync-interval series batch, every=K..., none is joined in order of K,
     back-pressure runs (bounded) are squares. With --host-work (configs/
     host_work.ini) this is the whole trade: what not waiting buys in samples/s
     against what it costs in memory; the title names the host work.
Bad input: one line on stderr, exit status 2 (no matplotlib, a failed write: exit 1).
"""
import csv
import json
import math
import os
import re
import sys

import plot_common  # tools/: the script's own folder is on sys.path

MB = 1e6
PROG = "plot_memory.py"


class InputError(Exception):
    pass


def mode_of_file(path):
    """out/memory.every10.csv -> 'every=10', out/memory.none.csv -> 'none', out/x.csv -> 'x'; a rank's log
    (--distributed mpi) names its rank: out/memory.rank1.csv -> 'rank 1', out/memory.rank1.none.csv -> 'none rank 1'."""
    parts = os.path.basename(path)[:-len(".csv")].split(".")
    ranks = [p[len("rank"):] for p in parts[1:] if re.fullmatch(r"rank\d+", p)]
    rest = [p for p in parts[1:] if not re.fullmatch(r"rank\d+", p)]
    tag = rest[-1] if rest else parts[0]
    m = re.fullmatch(r"every(\d+)", tag)
    mode = "every=" + m.group(1) if m else tag
    if not ranks:
        return mode
    return ("%s rank %s" % (mode, ranks[-1])) if rest else "rank " + ranks[-1]


def mode_rank(label):
    """Place in the sync-interval series: batch (K=1), every=K, none (K=inf); None for others."""
    m = re.fullmatch(r"every=(\d+)", label)
    return 1 if label == "batch" else int(m.group(1)) if m else math.inf if label == "none" else None


def series_order(label):
    """batch, every=2, every=10, none, then the others (bounded) by name."""
    rank = mode_rank(label)
    return (math.inf if rank is None else rank, rank is None, label)


def number(text, where):
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise InputError("%s: expected a number, got %r" % (where, text))
    if not math.isfinite(v):
        raise InputError("%s: expected a finite number, got %r" % (where, text))
    return v


def read_log(path):
    """Rows of (wall_s, bytes_in_use)."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in ("batch", "wall_s", "bytes_in_use") if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError("%s: not a memory log (no column %s)" % (path, missing[0]))
        rows = []
        for r in reader:
            where = "%s line %d" % (path, reader.line_num)
            rows.append((number(r["wall_s"], where + " wall_s"), number(r["bytes_in_use"], where + " bytes_in_use")))
    if not rows:
        raise InputError("%s: no rows" % path)
    return rows


def read_summaries(path):
    with open(path) as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as e:
            raise InputError("%s: not JSON (%s)" % (path, e))
    if isinstance(data, dict) and isinstance(data.get("runs"), list):  # --sweep: {"runs": [...], "sweep": ...}
        data = data["runs"]
    runs = data if isinstance(data, list) else [data]
    for i, r in enumerate(runs):
        if not isinstance(r, dict) or not isinstance(r.get("label", r.get("mode")), str):
            raise InputError("%s: run %d is not a summary (no label or mode)" % (path, i + 1))
        r["label"] = r.get("label", r.get("mode"))
        for key in ("samples_per_s", "mem_increase_bytes", "wall_s", "end_bytes"):
            if key in r:
                r[key] = number(r[key], "%s: run '%s' %s" % (path, r["label"], key))
    return runs


def plain_log_labels(axis):
    """1, 10, 100 on a log axis instead of powers of ten; minor ticks unlabelled (the axes span a decade)."""
    from matplotlib.ticker import NullFormatter
    axis.set_major_formatter("{x:g}")
    axis.set_minor_formatter(NullFormatter())


def draw_memory_over_time(ax, logs, runs, colors):
    by_label = {r["label"]: r for r in runs}
    peaks = [max(b for _, b in rows) for _, rows in logs]
    log_y = min(peaks) > 0 and max(peaks) / min(peaks) > 20  # else the small modes lie flat on the axis
    any_tail = False
    for label, rows in logs:
        t, b = zip(*rows)
        ax.plot(t, [v / MB for v in b], color=colors[label], lw=1.8, marker="o" if len(rows) == 1 else None,
                label=label)
        run = by_label.get(label, {})
        if "wall_s" in run and "end_bytes" in run and run["wall_s"] > t[-1]:
            ax.plot([t[-1], run["wall_s"]], [b[-1] / MB, run["end_bytes"] / MB], color=colors[label], lw=1.3,
                    ls="--")
            any_tail = True
    if log_y:
        ax.set_yscale("log")
        plain_log_labels(ax.yaxis)
    else:
        ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    ax.set(title="Memory in use while training", xlabel="wall time since the loop began (s)",
           ylabel="tracked bytes in use (MB%s)" % (", log scale" if log_y else ""))
    if any_tail:
        ax.plot([], [], color="0.35", lw=1.3, ls="--", label="draining, until waitall()")
    # beside the panel: inside, some line would run under it
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", borderaxespad=0)


def place_labels(ax, points):
    """Each label (x, y, text, colour) beside its point, at the first offset that keeps it inside the axes and off the
    markers, the earlier labels and the legend. Call once the figure is laid out: boxes are in pixels."""
    from matplotlib.transforms import Bbox
    renderer = ax.figure.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    taken = [Bbox.from_bounds(px - 6, py - 6, 12, 12) for px, py in ax.transData.transform([p[:2] for p in points])]
    if ax.get_legend():
        taken.append(ax.get_legend().get_window_extent(renderer))
    offsets = [(dx, dy) for dy in (9, -9, 21, -21, 33, -33) for dx in (7, -7)]
    for x, y, text, color in points:
        def label(dx, dy):  # in its point's colour: a label pushed away still says whose it is
            a = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize="small",
                            ha="left" if dx > 0 else "right", va="center", color=color)
            return a, a.get_window_extent(renderer).padded(2)
        for dx, dy in offsets:
            a, box = label(dx, dy)
            if inside.contains(box.x0, box.y0) and inside.contains(box.x1, box.y1) and \
                    not any(box.overlaps(o) for o in taken):
                break
            a.remove()
        else:  # crowded everywhere: the first place
            a, box = label(*offsets[0])
        taken.append(box)


def host_work_text(run):
    """', host work 2.8 ms (wait)' for a summary with --host-work, else ''."""
    hw = run.get("host_work_s") or 0
    return ", host work %.3g ms (%s)" % (hw * 1e3, run.get("host_work_kind", "wait")) if hw > 0 else ""


def draw_memory_vs_throughput(ax, runs, colors):
    from matplotlib.lines import Line2D
    pts = [(r["label"], r["samples_per_s"], max(r["mem_increase_bytes"], 1) / MB) for r in runs]
    series = sorted((mode_rank(l), x, y) for l, x, y in pts if mode_rank(l) is not None)
    if len(series) > 1:
        ax.plot([x for _, x, _ in series], [y for _, _, y in series], color="0.6", lw=1.2, ls="--", zorder=1)
    for label, x, y in pts:
        ax.scatter([x], [y], s=60, color=colors.get(label, "0.2"), marker="s" if mode_rank(label) is None else "o",
                   edgecolors="white", zorder=3)
    ax.set_yscale("log")
    plain_log_labels(ax.yaxis)
    ys = [y for _, _, y in pts]
    ax.set_ylim(10 ** math.floor(math.log10(min(ys) / 1.5)), 10 ** math.ceil(math.log10(max(ys) * 1.5)))
    ax.set_xlim(0, max(x for _, x, _ in pts) * 1.3)  # room for "bounded  2.00x" right of the last point
    ax.set(title="Memory increase vs throughput", xlabel="throughput (samples/s)",
           ylabel="memory increase (MB, log scale)")
    others = [l for l, _, _ in pts if mode_rank(l) is None]
    keys = [(Line2D([], [], color="0.6", lw=1.2, ls="--", marker="o", mfc="0.45", mec="white", ms=7),
             "sync interval: batch, every=K, none")] if len(series) > 1 else []
    if others:
        keys.append((Line2D([], [], color=colors[others[0]], ls="", marker="s", mec="white", ms=7),
                     "back-pressure (%s)" % ", ".join(others)))
    if keys:
        ax.legend(*zip(*keys), loc="lower left", fontsize="small", framealpha=0.92)
    # Each point names its mode and its throughput against the synchronized run's.
    base = next((x for l, x, _ in pts if l == "batch"), None)
    text = {l: "%s  %.2fx" % (l, x / base) if base and l != "batch" else l for l, x, _ in pts}
    return lambda: place_labels(ax, [(x, y, text[l], colors.get(l, "0.2")) for l, x, y in pts])


def parse_args(argv):
    ap = plot_common.parser(PROG, __doc__)
    ap.add_argument("inputs", nargs="+", help="memory-log CSVs and summary JSONs")
    ap.add_argument("-o", "--output", default="memory.svg", help="file to write, .svg or .png (default memory.svg)")
    ap.add_argument("--title", default=None, help="title above the panels")
    a = ap.parse_args(argv)
    for p in a.inputs:
        if not p.endswith((".csv", ".json")):
            ap.error("don't know what %s is (expected .csv memory logs or .json summaries)" % p)
    plot_common.check_output(ap, a.output)
    return a


def main(argv):
    a = parse_args(argv)
    try:
        logs = [(mode_of_file(p), read_log(p)) for p in a.inputs if p.endswith(".csv")]
        runs = [r for p in a.inputs if p.endswith(".json") for r in read_summaries(p)]
    except OSError as e:
        print("%s: error: cannot read %s: %s" % (PROG, e.filename, e.strerror), file=sys.stderr)
        return 2
    except (InputError, csv.Error, UnicodeDecodeError) as e:
        print("%s: error: %s" % (PROG, e), file=sys.stderr)
        return 2
    logs.sort(key=lambda lr: series_order(lr[0]))
    throughput = [r for r in runs if r.get("samples_per_s") and "mem_increase_bytes" in r]
    if not logs and not throughput:
        print("%s: error: nothing to draw (no memory log, no summary with samples_per_s and mem_increase_bytes)"
              % PROG, file=sys.stderr)
        return 2

    plt = plot_common.pyplot(PROG, __file__, argv)
    if plt is None:
        return 1

    # the same mode in the same colour in both panels
    colors = plot_common.mode_colors(sorted({l for l, _ in logs} | {r["label"] for r in runs}, key=series_order))
    n = bool(logs) + bool(throughput)
    fig, axes = plt.subplots(1, n, figsize=(7.2 * n, 5.2), squeeze=False, layout="constrained")
    axes = list(axes[0])
    if logs:
        draw_memory_over_time(axes.pop(0), logs, runs, colors)
    label_points = draw_memory_vs_throughput(axes.pop(0), throughput, colors) if throughput else None
    title = a.title
    if title is None:
        title = "asyncmlp: memory held by queued work"
        r0 = runs[0] if runs else {}
        if all(k in r0 for k in ("device", "batches", "batch_size")):
            title += ("\n" if n == 1 else " ") + "(%s, %s batches of %s%s)" % (
                r0["device"], r0["batches"], r0["batch_size"], host_work_text(r0))
    fig.suptitle(title, fontsize="x-large", fontweight="bold")
    if label_points:
        fig.canvas.draw()  # lays the figure out, then keeps that layout: labels are placed in pixels
        fig.set_layout_engine("none")
        label_points()
    return plot_common.save(fig, a.output, PROG)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
