#!/usr/bin/python3
"""Tests of trace_summary.py, beside it:
a trace with a device track (a GPU's own op times beside the worker's
launches), written here by hand: the GPU's busy time is the union of its ops,
the gaps between them are idle, and each kernel's GPU time is summed.

  python3 tools/test_trace_summary.py        (a CTest test: trace_summary_tests)
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trace_summary.py")

TRACE = """{"traceEvents": [
 {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "frontend"}},
 {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "queue cuda:0"}},
 {"ph": "M", "name": "thread_name", "pid": 1, "tid": 3, "args": {"name": "device cuda:0"}},
 {"ph": "X", "name": "batch", "pid": 1, "tid": 1, "ts": 0, "dur": 500},
 {"ph": "X", "name": "batch", "pid": 1, "tid": 1, "ts": 500, "dur": 500},
 {"ph": "X", "name": "matmul", "pid": 1, "tid": 2, "ts": 0, "dur": 10},
 {"ph": "X", "name": "relu", "pid": 1, "tid": 2, "ts": 10, "dur": 5},
 {"ph": "X", "name": "matmul", "pid": 1, "tid": 3, "ts": 0, "dur": 400},
 {"ph": "X", "name": "relu", "pid": 1, "tid": 3, "ts": 380, "dur": 120},
 {"ph": "X", "name": "matmul", "pid": 1, "tid": 3, "ts": 600, "dur": 300},
 {"ph": "X", "name": "relu", "pid": 1, "tid": 3, "ts": 900, "dur": 100}
]}"""


def summarize(trace):
    """trace_summary.py's stdout for the trace text (fails the test on a non-zero exit)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.json")
        with open(path, "w") as f:
            f.write(trace)
        r = subprocess.run([sys.executable, TOOL, path], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"trace_summary.py exited {r.returncode}: {r.stderr}")
    return r.stdout


def section(out, title):
    """The lines of the section whose first line starts with `title`, up to the next unindented line."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(title):
            rest = []
            for l in lines[i + 1:]:
                if not l.startswith(" "):
                    break
                rest.append(l)
            return line, rest
    raise AssertionError(f"no section {title!r} in:\n{out}")


def kernel_row(rows, name):
    """A kernel row's fields after its name, as numbers (whitespace-insensitive)."""
    rows = [r for r in rows if not r.lstrip().startswith("per batch")]
    for row in rows:
        fields = row.split()
        if fields and fields[0] == name:
            return [float(x.rstrip("%")) for x in fields[1:]]
    raise AssertionError(f"no row {name!r} in {rows}")


class TraceSummaryDevice(unittest.TestCase):
    def test_ReportsTheGpusBusyTimeGapsAndKernels(self):
        out = summarize(TRACE)
        head, rows = section(out, "device cuda:0 (GPU time)")
        # Overlapping ops count once: busy 0..500 and 600..1000.
        m = re.search(r"(\d+) batches, window ([\d.]+) ms, busy ([\d.]+) ms \(([\d.]+)%\), idle ([\d.]+) ms in "
                      r"(\d+) gaps \(longest ([\d.]+) ms, mean ([\d.]+) us\)", head)
        self.assertIsNotNone(m, head)
        batches, window, busy, share, idle, gaps, longest, mean = (float(x) for x in m.groups())
        self.assertEqual((batches, gaps), (2, 1))
        self.assertAlmostEqual(window, 1.0)
        self.assertAlmostEqual(busy, 0.90)
        self.assertAlmostEqual(share, 90.0)
        self.assertAlmostEqual(idle, 0.10)
        self.assertAlmostEqual(longest, 0.100)
        self.assertAlmostEqual(mean, 100.0)
        # count, GPU ms, ms/batch, share of the window, median us, median gap before it (us):
        # matmul ran 400 and 300 us, the second after 100 us idle; relu started inside matmul and at its end.
        for name, want in (("matmul", [2, 0.700, 0.350, 70.0, 350, 50]), ("relu", [2, 0.220, 0.110, 22.0, 110, 0])):
            got = kernel_row(rows, name)
            self.assertEqual(len(got), 6, got)
            for g, w in zip(got, want):
                self.assertAlmostEqual(g, w, places=3, msg=name)
        # Per batch: busy 900 us / 2; relu, the one op outside the GEMMs, 220 / 2; idle 100 / 2.
        self.assertIn("per batch: GPU busy 450.0 us, outside the GEMM ops 110.0 us, idle between ops 50.0 us", out)
        self.assertIn("queue cuda:0: 2 batches", out, "the launch track stays")

    def test_ATraceWithoutADeviceTrackHasNoGpuSection(self):
        out = summarize(TRACE.replace("device cuda:0", "other thread "))
        self.assertNotIn("GPU time", out)
        self.assertIn("queue cuda:0: 2 batches", out)


if __name__ == "__main__":
    unittest.main()
