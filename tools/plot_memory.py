#!/usr/bin/env python3
"""plot_memory.py — draw train_mlp's memory logs with matplotlib (PNG or SVG).

    train_mlp --config configs/quick.ini --compare \\
        --memory-log out/memory.csv --summary-json out/summary.json
    python3 tools/plot_memory.py out/memory*.csv out/summary.json -o out/memory.svg   # or .png

Needs matplotlib 3.6 or newer (Debian 12: python3-matplotlib, seen by /usr/bin/python3).

Inputs, by extension:
  *.csv   memory logs (--memory-log; one per mode with --compare: memory.batch.csv,
          memory.none.csv, memory.every10.csv, memory.bounded.csv ...). The mode is
          read from the file name.
  *.json  summaries (--summary-json): one object per run, or a list of them.

Panels (each drawn when its data is there):
  1. memory over wall time, one colour per memory log: tracked bytes in use
     (solid), sampled when each batch has been queued; the summary's end point
     (after waitall) joined by a dashed line, the queue draining what was queued;
     on a CPU device the process's RSS too (dotted), the same memory seen by the
     operating system, unless the process's own baseline would dwarf the tracked
     bytes. Log scale when the modes' peaks differ by more than 20x.
  2. memory increase (log scale) against samples/s, one point per run; the
     sync-interval series batch, every=K..., none is joined in order of K,
     back-pressure runs (bounded) are squares.
Bad input: one line on stderr, exit status 2 (no matplotlib, a failed write: exit 1).
"""
import argparse
import csv
import json
import math
import os
import re
import sys

MB = 1e6
PROG = "plot_memory.py"
FIXED_COLORS = {"batch": "C0", "none": "C3", "bounded": "C2"}
OTHER_COLORS = ["C1", "C4", "C5", "C6", "C9", "C7", "C8"]


class InputError(Exception):
    pass


def mode_of_file(path):
    """out/memory.every10.csv -> 'every=10', out/memory.none.csv -> 'none', out/x.csv -> 'x'."""
    tag = os.path.basename(path)[:-len(".csv")].rsplit(".", 1)[-1]
    m = re.fullmatch(r"every(\d+)", tag)
    return "every=" + m.group(1) if m else tag


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
    """Rows of (wall_s, bytes_in_use, rss_bytes or None)."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in ("batch", "wall_s", "bytes_in_use") if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError("%s: not a memory log (no column %s)" % (path, missing[0]))
        rows = []
        for r in reader:
            where = "%s line %d" % (path, reader.line_num)
            rss = r.get("rss_bytes")
            rows.append((number(r["wall_s"], where + " wall_s"), number(r["bytes_in_use"], where + " bytes_in_use"),
                         number(rss, where + " rss_bytes") if rss else None))
    if not rows:
        raise InputError("%s: no rows" % path)
    return rows


def read_summaries(path):
    with open(path) as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as e:
            raise InputError("%s: not JSON (%s)" % (path, e))
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
    peaks = [max(b for _, b, _ in rows) for _, rows in logs]
    log_y = min(peaks) > 0 and max(peaks) / min(peaks) > 20
    # RSS is the same memory as the tracked bytes only when the device is the host, and worth a line only
    # when the tracked bytes are not lost under the process's own baseline
    rss_peak = max((r for _, rows in logs for _, _, r in rows if r is not None), default=0)
    show_rss = max(peaks) >= 0.1 * rss_peak
    any_rss = any_tail = False
    for label, rows in logs:
        c = colors[label]
        run = by_label.get(label, {})
        t = [w for w, _, _ in rows]
        ax.plot(t, [b / MB for _, b, _ in rows], color=c, lw=1.8, marker="o" if len(rows) == 1 else None,
                label=label)
        if "wall_s" in run and "end_bytes" in run and run["wall_s"] > t[-1]:
            # straight on a linear scale, the same straight line bent on a log one
            fractions = [i / 32 for i in range(33)]
            ax.plot([t[-1] + f * (run["wall_s"] - t[-1]) for f in fractions],
                    [(rows[-1][1] + f * (run["end_bytes"] - rows[-1][1])) / MB for f in fractions],
                    color=c, lw=1.3, ls="--")
            any_tail = True
        if show_rss and str(run.get("device", "cpu")).startswith("cpu") and all(r is not None for _, _, r in rows):
            ax.plot(t, [r / MB for _, _, r in rows], color=c, lw=1.3, ls=":")
            any_rss = True
    if log_y:
        ax.set_yscale("log")
        plain_log_labels(ax.yaxis)
    else:
        ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    ax.set(title="Memory in use while training", xlabel="wall time since the loop began (s)",
           ylabel="memory (MB%s)" % (", log scale" if log_y else ""))
    handles, labels = ax.get_legend_handles_labels()
    for shown, style, text in ((True, "-", "tracked bytes in use"), (any_rss, ":", "process RSS"),
                               (any_tail, "--", "draining, until waitall()")):
        if shown and (any_rss or any_tail):
            handles.append(ax.plot([], [], color="0.35", lw=1.6, ls=style)[0])
            labels.append(text)
    # beside the panel: inside, some line would run under it
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", borderaxespad=0)


def place_labels(ax, points):
    """Labels beside their points: each at the nearest offset that stays in the axes, overlaps no
    earlier label, marker or the legend, and lies nearer its own point than any other (a leader line
    when it had to go further out). Call once the figure is laid out: overlaps are measured in pixels."""
    renderer = ax.figure.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    where = [tuple(ax.transData.transform((x, y))) for x, y, _ in points]
    boxes = [(px - 6, py - 6, px + 6, py + 6) for px, py in where]
    if ax.get_legend():
        lb = ax.get_legend().get_window_extent(renderer)
        boxes.append((lb.x0, lb.y0, lb.x1, lb.y1))
    offsets = [(r * dx, r * dy + (4 if dy >= 0 else -12)) for r in (8, 22, 38)
               for dx, dy in ((1, 0.5), (-1, 0.5), (1, -0.5), (-1, -0.5), (0, 1), (0, -1))]
    for i, (x, y, text) in enumerate(points):
        for n, (dx, dy) in enumerate(offsets + [offsets[0]]):  # crowded everywhere: the first place
            a = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize="small",
                            ha="left" if dx > 0 else "right" if dx < 0 else "center",
                            arrowprops=dict(arrowstyle="-", color="0.5", lw=0.8, shrinkA=1, shrinkB=5)
                            if abs(dx) + abs(dy) > 20 else None)
            bb = a.get_window_extent(renderer)
            box = (bb.x0 - 2, bb.y0 - 1, bb.x1 + 2, bb.y1 + 1)
            fits = inside.x0 <= box[0] and box[2] <= inside.x1 and inside.y0 <= box[1] and box[3] <= inside.y1
            own = distance(box, where[i])
            if n == len(offsets) or fits and not any(overlap(box, o) for o in boxes) and all(
                    own < distance(box, p) for j, p in enumerate(where) if j != i):
                break
            a.remove()
        boxes.append(box)


def distance(box, p):
    return math.hypot(max(box[0] - p[0], 0, p[0] - box[2]), max(box[1] - p[1], 0, p[1] - box[3]))


def overlap(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


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
    ax.set_xlim(0, max(x for _, x, _ in pts) * 1.15)
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
    return lambda: place_labels(ax, [(x, y, l) for l, x, y in pts])


def parse_args(argv):
    class Parser(argparse.ArgumentParser):
        def error(self, message):  # one line, exit 2
            print("%s: error: %s" % (PROG, message), file=sys.stderr)
            sys.exit(2)

    ap = Parser(prog=PROG, description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n", 1)[1],
                formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", help="memory-log CSVs and summary JSONs")
    ap.add_argument("-o", "--output", default="memory.svg", help="file to write, .svg or .png (default memory.svg)")
    ap.add_argument("--title", default=None, help="title above the panels")
    a = ap.parse_args(argv)
    for p in a.inputs:
        if not p.endswith((".csv", ".json")):
            ap.error("don't know what %s is (expected .csv memory logs or .json summaries)" % p)
    if os.path.splitext(a.output)[1].lower() not in (".svg", ".png"):
        ap.error("-o %s: the output must end in .svg or .png" % a.output)
    if not os.path.isdir(os.path.dirname(a.output) or "."):
        ap.error("-o %s: directory '%s' does not exist" % (a.output, os.path.dirname(a.output)))
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

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        if tuple(int(v) for v in re.findall(r"\d+", matplotlib.__version__)[:2]) < (3, 6):
            raise ImportError("matplotlib %s is older than 3.6" % matplotlib.__version__)
    except ImportError:
        print("%s: error: matplotlib not found for %s (Debian: apt-get install python3-matplotlib)"
              % (PROG, sys.executable), file=sys.stderr)
        return 1
    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "asyncmlp", "axes.grid": True,
                         "grid.color": "0.9", "axes.axisbelow": True, "font.size": 11})

    colors = dict(FIXED_COLORS)  # the same mode in the same colour in both panels
    others = iter(OTHER_COLORS * 4)
    for label in sorted({l for l, _ in logs} | {r["label"] for r in runs}, key=series_order):
        colors.setdefault(label, next(others, "0.3"))
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
            title += ("\n" if n == 1 else " ") + "(%s, %s batches of %s)" % (r0["device"], r0["batches"],
                                                                           r0["batch_size"])
    fig.suptitle(title, fontsize="x-large", fontweight="bold")
    if label_points:
        fig.canvas.draw()  # lays the figure out, then keeps that layout: labels are placed in pixels
        fig.set_layout_engine("none")
        label_points()
    try:
        fig.savefig(a.output, dpi=150, metadata={"Date": None} if a.output.lower().endswith(".svg") else None)
    except OSError as e:
        print("%s: error: %s" % (PROG, e), file=sys.stderr)
        return 1
    print("wrote %s" % a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
