#!/usr/bin/env python3
"""plot_sweep.py — draw train_mlp --sweep's summary with matplotlib (PNG or SVG).

    train_mlp --config configs/quick.ini --sweep --summary-json out/sweep.json
    python3 tools/plot_sweep.py out/sweep.json -o out/sweep.svg   # or .png

Two panels over x = h/d (the frontend's time per batch over the device's):
  1. speed-up over batch (samples/s over the synchronized run's at the same h/d);
  2. memory increase (MB).
Measured points (filled, one per run, at its measured h/d) beside each run's
prediction from its own measured h and d (hollow: the throughput model's
speed-up; the backlog h and d imply x bytes per batch), over the models' curves at
the sweep's d (lines; none's dashed, over bounded's, which it meets in the
speed-up panel), one colour per mode. The curves are the summary's
"sweep_model" curves and the hollow points its rows' predicted fields, which
train_mlp computes with the same functions as its predictions
(train/predict/predict.h): this script draws them and computes none of its own.
Needs matplotlib 3.6 or newer (Debian 12: python3-matplotlib); run by a python3 that
lacks it, the script runs itself again with /usr/bin/python3.
Bad input: one line on stderr, exit status 2 (no matplotlib, a failed write: exit 1).
"""
import json
import re
import sys

import plot_common  # tools/: the script's own folder is on sys.path

MB = 1e6
PROG = "plot_sweep.py"


class InputError(Exception):
    pass


def read_sweep(path):
    with open(path) as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as e:
            raise InputError("%s: not JSON (%s)" % (path, e))
    if not isinstance(data, dict) or not isinstance(data.get("sweep"), list) or \
            not isinstance(data.get("sweep_model"), dict):
        raise InputError("%s: not a sweep summary (train_mlp --sweep --summary-json FILE)" % path)
    rows, model = data["sweep"], data["sweep_model"]
    for i, r in enumerate(rows):
        for key in ("mode", "x", "speedup", "mem_increase_bytes"):
            if key not in r:
                raise InputError("%s: sweep row %d has no %s" % (path, i + 1, key))
    if not rows:
        raise InputError("%s: the sweep has no rows" % path)
    return data.get("runs", []), rows, model


def order(mode):
    m = re.fullmatch(r"every=(\d+)", mode)
    return (0, 0) if mode == "batch" else (1, int(m.group(1))) if m else (2, 0) if mode == "none" else (3, 0)


def parse_args(argv):
    ap = plot_common.parser(PROG, __doc__)
    ap.add_argument("summary", help="train_mlp --sweep --summary-json FILE")
    ap.add_argument("-o", "--output", default="sweep.svg", help="file to write, .svg or .png (default sweep.svg)")
    a = ap.parse_args(argv)
    plot_common.check_output(ap, a.output)
    return a


def main(argv):
    a = parse_args(argv)
    try:
        runs, rows, model = read_sweep(a.summary)
    except OSError as e:
        print("%s: error: cannot read %s: %s" % (PROG, e.filename, e.strerror), file=sys.stderr)
        return 2
    except (InputError, UnicodeDecodeError) as e:
        print("%s: error: %s" % (PROG, e), file=sys.stderr)
        return 2
    plt = plot_common.pyplot(PROG, __file__, argv)
    if plt is None:
        return 1

    modes = sorted({r["mode"] for r in rows} | {c["mode"] for c in model.get("curves", [])}, key=order)
    colors = plot_common.mode_colors(modes)
    fig, (ax_speed, ax_mem) = plt.subplots(1, 2, figsize=(16, 5.4), layout="constrained")
    # none's curves are dashed and drawn last: bounded's speed-up curve is the
    # same (the model's K is N for both), and solid it would hide none's.
    for c in sorted(model.get("curves", []), key=lambda c: (c["mode"] == "none", order(c["mode"]))):
        xs = [p["x"] for p in c["points"]]
        style = dict(color=colors[c["mode"]], lw=1.3, alpha=0.8, ls="--" if c["mode"] == "none" else "-")
        gid = re.sub(r"[^A-Za-z0-9_-]", "", c["mode"])  # an SVG id: "every4"
        ax_speed.plot(xs, [p["speedup"] for p in c["points"]], gid="model-speedup-" + gid, **style)
        ax_mem.plot(xs, [p["increase_bytes"] / MB for p in c["points"]], gid="model-memory-" + gid, **style)
    for m in modes:
        pts = [r for r in rows if r["mode"] == m]
        marker = "s" if m == "bounded" else "o"
        ax_speed.plot([r["x"] for r in pts], [r["speedup"] for r in pts], ls="", marker=marker, ms=7,
                      color=colors[m], mec="white", label=m)
        ax_mem.plot([r["x"] for r in pts], [r["mem_increase_bytes"] / MB for r in pts], ls="", marker=marker, ms=7,
                    color=colors[m], mec="white", label=m)
        ax_speed.plot([r["x"] for r in pts], [r.get("predicted_speedup", 0) for r in pts], ls="", marker=marker, ms=9,
                      mfc="none", mec=colors[m], mew=1.2)
        ax_mem.plot([r["x"] for r in pts], [r.get("model_increase_bytes", 0) / MB for r in pts], ls="",
                    marker=marker, ms=9, mfc="none", mec=colors[m], mew=1.2)
    ax_speed.axvline(1.0, color="0.6", lw=0.8, ls=":")
    ax_mem.axvline(1.0, color="0.6", lw=0.8, ls=":")
    ax_speed.set(title="Speed-up over batch", xlabel="h / d (frontend's time per batch / device's)",
                 ylabel="samples/s over batch's at the same h/d")
    ax_mem.set(title="Memory increase", xlabel="h / d (frontend's time per batch / device's)",
               ylabel="memory increase (MB)")
    from matplotlib.lines import Line2D
    keys = [Line2D([], [], color="0.3", ls="", marker="o", mec="white", ms=7),
            Line2D([], [], color="0.3", ls="", marker="o", mfc="none", ms=9),
            Line2D([], [], color="0.3", lw=1.3)]
    handles, labels = ax_mem.get_legend_handles_labels()
    ax_mem.legend(handles + keys, labels + ["measured", "predicted from\nthe run's h and d",
                                            "model at the sweep's d,\nno fresh memory\n(none's dashed)"],
                  fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), title="mode")
    title = "asyncmlp: the trade between throughput and memory"
    r0 = runs[0] if runs else {}
    if all(k in r0 for k in ("device", "batches", "batch_size")):
        epochs = model.get("epochs", 1) or 1
        title += " (%s, %s%s batches of %s, d = %.3f ms%s)" % (
            r0["device"], "%d epochs of " % epochs if epochs > 1 else "", r0["batches"], r0["batch_size"],
            model.get("device_s", 0) * 1e3, "; the last epoch" if epochs > 1 else "")
    fig.suptitle(title, fontsize="x-large", fontweight="bold")
    return plot_common.save(fig, a.output, PROG)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
