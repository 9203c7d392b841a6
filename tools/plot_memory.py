#!/usr/bin/env python3
"""plot_memory.py — draw train_mlp's memory logs as an SVG (standard library only).

    train_mlp --config configs/quick.ini --compare \
        --memory-log out/mem.csv --summary-json out/summary.json
    python3 tools/plot_memory.py out/mem.*.csv out/summary.json -o out/memory.svg
    rsvg-convert -o out/memory.png out/memory.svg        # or: -o out/memory.png

Inputs, by extension:
  *.csv   memory logs (--memory-log; one per mode with --compare: mem.batch.csv,
          mem.none.csv, mem.every10.csv, mem.bounded.csv ...). The mode is read
          from the file name.
  *.json  summaries (--summary-json): one object per run.

Panels (each drawn when its data is there):
  1. tracked bytes in use over wall time, one line per memory log. Each row is
     sampled when its batch has been queued; the summary's end point (after
     waitall) is joined with a dashed line: the queue draining what was queued.
  2. memory increase (log scale) against samples/s, one point per run of the
     summaries; the sync-interval series batch, every=K..., none is joined in
     order of K, back-pressure runs are drawn apart.
"""
import argparse
import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys
from xml.sax.saxutils import escape

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
           "#7f7f7f", "#bcbd22"]
FONT = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"
MB = 1e6


def mode_of_file(path):
    """out/mem.every10.csv -> 'every=10', out/mem.none.csv -> 'none', out/x.csv -> 'x'."""
    base = os.path.basename(path)
    base = base[:-4] if base.endswith(".csv") else base
    tag = base.rsplit(".", 1)[-1]
    m = re.fullmatch(r"every(\d+)", tag)
    return "every=%s" % m.group(1) if m else tag


def read_log(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows.append({
                "batch": int(r["batch"]),
                "wall_s": float(r["wall_s"]),
                "bytes_in_use": float(r["bytes_in_use"]),
                "loss": float(r["loss"]) if r.get("loss") else None,
            })
    if not rows:
        raise ValueError("%s: no rows" % path)
    return rows


def read_summaries(paths):
    runs = []
    for p in paths:
        with open(p) as f:
            data = json.load(f)
        runs.extend(data if isinstance(data, list) else [data])
    return runs


def mode_rank(label):
    """Order of the sync-interval series: batch (K=1), every=K, none (K=inf)."""
    if label == "batch":
        return 1
    m = re.fullmatch(r"every=(\d+)", label)
    if m:
        return int(m.group(1))
    if label == "none":
        return math.inf
    return None


def nice_ticks(lo, hi, n=6):
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw), default=10 * mag)
    start = math.floor(lo / step) * step
    ticks, i = [], 0
    while not ticks or ticks[-1] < hi - step * 1e-9:  # the last tick covers hi
        ticks.append(round(start + i * step, 12))
        i += 1
    return ticks, step


def fmt(v, step=None):
    if v == 0:
        return "0"
    if step is not None and step >= 1000:
        return "%gk" % (v / 1e3)
    if step is not None and step < 1:
        digits = max(0, -int(math.floor(math.log10(step))))
        return "%.*f" % (digits, v)
    if abs(v) >= 1e6:
        return "%gM" % (v / 1e6)
    if abs(v) >= 1e4:
        return "%gk" % (v / 1e3)
    return "%g" % v


class Panel:
    """One plot area: maps data to pixels and draws axes, ticks, labels."""

    def __init__(self, svg, x0, y0, w, h, xr, yr, logy=False):
        self.svg, self.x0, self.y0, self.w, self.h = svg, x0, y0, w, h
        self.xr, self.yr, self.logy = xr, yr, logy

    def px(self, x):
        return self.x0 + (x - self.xr[0]) / (self.xr[1] - self.xr[0]) * self.w

    def py(self, y):
        if self.logy:
            lo, hi = math.log10(self.yr[0]), math.log10(self.yr[1])
            return self.y0 + self.h - (math.log10(max(y, self.yr[0])) - lo) / (hi - lo) * self.h
        return self.y0 + self.h - (y - self.yr[0]) / (self.yr[1] - self.yr[0]) * self.h

    def axes(self, title, xlabel, ylabel, xticks, xstep, yticks, ystep):
        s = self.svg
        s.append("<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='white' stroke='#444'/>"
                 % (self.x0, self.y0, self.w, self.h))
        for t in xticks:
            x = self.px(t)
            s.append("<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#e4e4e4'/>"
                     % (x, self.y0, x, self.y0 + self.h))
            s.append("<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#444'/>"
                     % (x, self.y0 + self.h, x, self.y0 + self.h + 5))
            s.append("<text x='%.1f' y='%.1f' font-size='12' text-anchor='middle' %s>%s</text>"
                     % (x, self.y0 + self.h + 19, FONT, escape(fmt(t, xstep))))
        for t in yticks:
            y = self.py(t)
            s.append("<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#e4e4e4'/>"
                     % (self.x0, y, self.x0 + self.w, y))
            s.append("<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#444'/>"
                     % (self.x0 - 5, y, self.x0, y))
            s.append("<text x='%.1f' y='%.1f' font-size='12' text-anchor='end' %s>%s</text>"
                     % (self.x0 - 8, y + 4, FONT, escape(fmt(t, ystep))))
        s.append("<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='none' stroke='#444'/>"
                 % (self.x0, self.y0, self.w, self.h))
        s.append("<text x='%.1f' y='%.1f' font-size='15' font-weight='bold' text-anchor='middle' %s>%s</text>"
                 % (self.x0 + self.w / 2, self.y0 - 12, FONT, escape(title)))
        s.append("<text x='%.1f' y='%.1f' font-size='13' text-anchor='middle' %s>%s</text>"
                 % (self.x0 + self.w / 2, self.y0 + self.h + 40, FONT, escape(xlabel)))
        cx, cy = self.x0 - 62, self.y0 + self.h / 2
        s.append("<text x='%.1f' y='%.1f' font-size='13' text-anchor='middle' transform='rotate(-90 %.1f %.1f)' %s>%s</text>"
                 % (cx, cy, cx, cy, FONT, escape(ylabel)))

    def polyline(self, pts, color, width=2.0, dash=None):
        d = " ".join("%.1f,%.1f" % (self.px(x), self.py(y)) for x, y in pts)
        extra = " stroke-dasharray='%s'" % dash if dash else ""
        self.svg.append("<polyline points='%s' fill='none' stroke='%s' stroke-width='%.1f'%s "
                        "stroke-linejoin='round'/>" % (d, color, width, extra))

    def marker(self, x, y, color, shape="circle", r=5.5):
        X, Y = self.px(x), self.py(y)
        if shape == "square":
            self.svg.append("<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='%s' stroke='white'/>"
                            % (X - r, Y - r, 2 * r, 2 * r, color))
        else:
            self.svg.append("<circle cx='%.1f' cy='%.1f' r='%.1f' fill='%s' stroke='white'/>" % (X, Y, r, color))

    def legend(self, items, corner="right"):
        """items: (label, color, style) with style 'line' or 'square' or 'circle'."""
        s = self.svg
        width = 12 + max(len(lbl) for lbl, _, _ in items) * 7.2 + 34
        x = self.x0 + self.w - width - 10 if corner.endswith("right") else self.x0 + 10
        y = self.y0 + 10 if not corner.startswith("bottom") else self.y0 + self.h - 18 - 19 * len(items)
        s.append("<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='white' fill-opacity='0.92' stroke='#bbb'/>"
                 % (x, y, width, 8 + 19 * len(items)))
        for i, (lbl, color, style) in enumerate(items):
            cy = y + 16 + 19 * i
            if style in ("line", "dash"):
                dash = " stroke-dasharray='6,4'" if style == "dash" else ""
                s.append("<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s' stroke-width='%s'%s/>"
                         % (x + 8, cy - 4, x + 30, cy - 4, color, "3" if style == "line" else "1.6", dash))
            elif style == "square":
                s.append("<rect x='%.1f' y='%.1f' width='10' height='10' fill='%s'/>" % (x + 14, cy - 9, color))
            else:
                s.append("<circle cx='%.1f' cy='%.1f' r='5' fill='%s'/>" % (x + 19, cy - 4, color))
            s.append("<text x='%.1f' y='%.1f' font-size='12' %s>%s</text>" % (x + 38, cy, FONT, escape(lbl)))


def color_map(labels):
    fixed = {"batch": PALETTE[0], "none": PALETTE[1], "bounded": PALETTE[2]}
    out, i = {}, 3
    for lbl in labels:
        if lbl in fixed:
            out[lbl] = fixed[lbl]
        elif lbl not in out:
            out[lbl] = PALETTE[i % len(PALETTE)]
            i += 1
    return out


def draw_memory_over_time(svg, box, logs, runs, colors):
    x0, y0, w, h = box
    by_label = {r.get("label", r.get("mode")): r for r in runs}
    t_max, m_max = 0.0, 0.0
    series = []
    for label, rows in logs:
        pts = [(r["wall_s"], r["bytes_in_use"] / MB) for r in rows]
        run = by_label.get(label)
        tail = None
        if run and "end_bytes" in run and run.get("wall_s", 0) > pts[-1][0]:
            tail = [pts[-1], (run["wall_s"], run["end_bytes"] / MB)]
        series.append((label, pts, tail))
        t_max = max([t_max] + [p[0] for p in pts] + ([tail[1][0]] if tail else []))
        m_max = max([m_max] + [p[1] for p in pts])
    xt, xs = nice_ticks(0, t_max * 1.02 or 1)
    yt, ys = nice_ticks(0, m_max * 1.08 or 1)
    p = Panel(svg, x0, y0, w, h, (0, xt[-1]), (0, yt[-1]))
    p.axes("Memory in use while training", "wall time since the loop began (s)",
           "tracked bytes in use (MB)", xt, xs, yt, ys)
    for label, pts, tail in series:
        c = colors[label]
        if len(pts) == 1:
            p.marker(pts[0][0], pts[0][1], c, r=3.5)
        else:
            p.polyline(pts, c, 2.4)
        if tail:
            p.polyline(tail, c, 1.6, dash="6,4")
    items = [(lbl, colors[lbl], "line") for lbl, _, _ in series]
    if any(t for _, _, t in series):
        items.append(("draining, until waitall()", "#666", "dash"))
    p.legend(items)


def draw_memory_vs_throughput(svg, box, runs, colors):
    x0, y0, w, h = box
    pts = [(r.get("label", r.get("mode")), r["samples_per_s"], max(r["mem_increase_bytes"], 1) / MB)
           for r in runs if r.get("samples_per_s")]
    xs = [p[1] for p in pts]
    ys = [p[2] for p in pts]
    xt, xstep = nice_ticks(0, max(xs) * 1.12)
    lo = 10 ** math.floor(math.log10(min(ys) / 1.5))
    hi = 10 ** math.ceil(math.log10(max(ys) * 1.5))
    yt = [10 ** e for e in range(int(round(math.log10(lo))), int(round(math.log10(hi))) + 1)]
    p = Panel(svg, x0, y0, w, h, (0, xt[-1]), (lo, hi), logy=True)
    p.axes("Memory increase vs throughput", "throughput (samples/s)",
           "memory increase (MB, log scale)", xt, xstep, yt, None)
    series = sorted((mode_rank(l), x, y, l) for l, x, y in pts if mode_rank(l) is not None)
    if len(series) > 1:
        p.polyline([(x, y) for _, x, y, _ in series], "#999", 1.4, dash="3,3")
    placed = []  # label anchors already drawn: move a label that would overlap one
    for label, x, y in pts:
        bounded = mode_rank(label) is None
        c = colors.get(label, "#333")
        p.marker(x, y, c, "square" if bounded else "circle")
        # back-pressure's label goes left of its square: it sits beside the sync series
        anchor_right = bounded or p.px(x) > x0 + w - 90
        lx, ly = p.px(x) + (-9 if anchor_right else 9), p.py(y) - 8
        tw = 7.0 * len(label)  # rough text width at font-size 12
        left, right = (lx - tw, lx) if anchor_right else (lx, lx + tw)
        for dy in (0, 22, -16, 38, -32):
            if all(abs(ly + dy - qy) > 14 or right < ql or left > qr for ql, qr, qy in placed):
                ly += dy
                break
        placed.append((left, right, ly))
        svg.append("<text x='%.1f' y='%.1f' font-size='12' text-anchor='%s' %s>%s</text>"
                   % (lx, ly, "end" if anchor_right else "start", FONT, escape(label)))
    p.legend([("sync interval: batch, every=K, none", "#999", "line"),
              ("back-pressure (bounded)", colors.get("bounded", PALETTE[2]), "square")], corner="bottom-left")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    ap.add_argument("inputs", nargs="+", help="memory-log CSVs and summary JSONs")
    ap.add_argument("-o", "--output", default="memory.svg",
                    help="SVG to write (default memory.svg); a .png name writes the SVG beside it "
                         "and converts it with rsvg-convert")
    ap.add_argument("--title", default=None, help="title above the panels")
    a = ap.parse_args(argv)

    csvs = [p for p in a.inputs if p.endswith(".csv")]
    jsons = [p for p in a.inputs if p.endswith(".json")]
    other = [p for p in a.inputs if p not in csvs and p not in jsons]
    if other:
        ap.error("don't know what %s is (expected .csv memory logs or .json summaries)" % other[0])
    try:
        logs = [(mode_of_file(p), read_log(p)) for p in csvs]
        runs = read_summaries(jsons)
    except (OSError, ValueError, KeyError) as e:
        print("plot_memory.py: error: %s" % e, file=sys.stderr)
        return 2
    order = {"batch": 0, "none": 10 ** 9, "bounded": 10 ** 9 + 1}
    logs.sort(key=lambda lr: order.get(lr[0], mode_rank(lr[0]) or 10 ** 8))
    labels = [l for l, _ in logs] + [r.get("label", r.get("mode")) for r in runs]
    colors = color_map(labels)
    panels = []
    if logs:
        panels.append(lambda svg, box: draw_memory_over_time(svg, box, logs, runs, colors))
    if len([r for r in runs if r.get("samples_per_s")]) >= 1:
        panels.append(lambda svg, box: draw_memory_vs_throughput(svg, box, runs, colors))
    if not panels:
        print("plot_memory.py: error: nothing to draw", file=sys.stderr)
        return 2

    pw, ph, left, top, gap = 520, 380, 90, 90, 110
    width = left + len(panels) * pw + (len(panels) - 1) * gap + 40
    height = top + ph + 70
    svg = ["<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' viewBox='0 0 %d %d'>"
           % (width, height, width, height),
           "<rect width='100%' height='100%' fill='white'/>"]
    title = a.title
    if title is None:
        r0 = runs[0] if runs else None
        title = "asyncmlp: memory held by queued work"
        if r0:
            title += " (%s, %d batches of %d)" % (r0.get("device", "?"), r0.get("batches", 0), r0.get("batch_size", 0))
    svg.append("<text x='%.1f' y='32' font-size='18' font-weight='bold' text-anchor='middle' %s>%s</text>"
               % (width / 2, FONT, escape(title)))
    for i, draw in enumerate(panels):
        draw(svg, (left + i * (pw + gap), top, pw, ph))
    svg.append("</svg>")

    out = a.output
    svg_path = out[:-4] + ".svg" if out.endswith(".png") else out
    with open(svg_path, "w") as f:
        f.write("\n".join(svg) + "\n")
    print("wrote %s" % svg_path)
    if out.endswith(".png"):
        tool = shutil.which("rsvg-convert")
        if not tool:
            print("plot_memory.py: error: rsvg-convert not found; the SVG is %s" % svg_path, file=sys.stderr)
            return 1
        subprocess.run([tool, "-o", out, svg_path], check=True)
        print("wrote %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
