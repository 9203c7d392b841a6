"""plot_common.py — what tools/plot_memory.py and tools/plot_sweep.py share:
the one-line command-line errors, the output file's checks, matplotlib (3.6 or
newer, found by re-running the script with Debian's /usr/bin/python3 when the
running python3 lacks it), the house style, a colour per sync mode that is the
same in every plot, and the write.
"""
import argparse
import os
import re
import sys

FIXED_COLORS = {"batch": "C0", "none": "C3", "bounded": "C2"}
OTHER_COLORS = ["C1", "C4", "C5", "C6", "C9", "C7", "C8"]


def parser(prog, doc):
    """An ArgumentParser whose errors are one line on stderr and exit status 2."""
    class Parser(argparse.ArgumentParser):
        def error(self, message):
            print("%s: error: %s" % (prog, message), file=sys.stderr)
            sys.exit(2)

    return Parser(prog=prog, description=doc.split("\n\n")[0], epilog=doc.split("\n", 1)[1],
                  formatter_class=argparse.RawDescriptionHelpFormatter)


def check_output(ap, path):
    """-o must name an .svg or .png in a directory that exists (ap.error otherwise)."""
    if os.path.splitext(path)[1].lower() not in (".svg", ".png"):
        ap.error("-o %s: the output must end in .svg or .png" % path)
    if not os.path.isdir(os.path.dirname(path) or "."):
        ap.error("-o %s: directory '%s' does not exist" % (path, os.path.dirname(path)))


def pyplot(prog, script, argv):
    """matplotlib.pyplot with the house style, or None after one line on stderr
    (the caller exits 1). Without a usable matplotlib, re-runs `script` with
    /usr/bin/python3, which sees python3-matplotlib where a python3 earlier on
    PATH may not."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        if tuple(int(v) for v in re.findall(r"\d+", matplotlib.__version__)[:2]) < (3, 6):
            raise ImportError("matplotlib %s is older than 3.6" % matplotlib.__version__)
    except ImportError as e:
        debian = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(debian) and os.access(debian, os.X_OK):
            os.execv(debian, [debian, os.path.abspath(script)] + argv)
        print("%s: error: no usable matplotlib for %s: %s (Debian: apt-get install python3-matplotlib)"
              % (prog, sys.executable, e), file=sys.stderr)
        return None
    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "asyncmlp", "axes.grid": True,
                         "grid.color": "0.9", "axes.axisbelow": True, "font.size": 11})
    return plt


def mode_colors(labels):
    """A colour per label, in the order given: batch, none and bounded always
    the same, the others from a list, then grey."""
    colors = dict(FIXED_COLORS)
    others = iter(OTHER_COLORS * 4)
    for label in labels:
        colors.setdefault(label, next(others, "0.3"))
    return colors


def save(fig, path, prog):
    """Writes the figure (an SVG without a date: the same input, the same bytes);
    the exit status: 0, or 1 after one line on stderr."""
    try:
        fig.savefig(path, dpi=150, metadata={"Date": None} if path.lower().endswith(".svg") else None)
    except OSError as e:
        print("%s: error: %s" % (prog, e), file=sys.stderr)
        return 1
    print("wrote %s" % path)
    return 0
