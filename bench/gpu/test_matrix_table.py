#!/usr/bin/python3
"""bench/gpu/matrix_table.py on runs written here: ratios per round against
the same round's default, the median, and the verdict a default change
needs (a win in every round); a folder without runs is exit 2."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import matrix_table  # noqa: E402


def write(folder, tag, batch, prec, rnd, sps):
    with open(os.path.join(folder, f"{tag}_{batch}_{prec}_{rnd}.json"), "w") as f:
        json.dump([{"samples_per_s": sps}], f)


class MatrixTable(unittest.TestCase):
    def test_ratios_per_round_and_the_verdicts(self):
        with tempfile.TemporaryDirectory() as d:
            for rnd, (base, fast, mixed) in enumerate([(100, 110, 99), (200, 210, 205), (100, 120, 101)], 1):
                write(d, "default", 1024, "fp32", rnd, base)
                write(d, "out_grad", 1024, "fp32", rnd, fast)
                write(d, "lt", 1024, "fp32", rnd, mixed)
            write(d, "default", 64, "tf32", 1, 100)
            write(d, "all", 64, "tf32", 1, 90)
            with open(os.path.join(d, "default_64_tf32_2.log"), "w") as f:
                f.write("not a run")
            rows = {(r["batch"], r["precision"], r["candidate"]): r for r in matrix_table.verdicts(matrix_table.collect(d))}
            self.assertEqual(set(rows), {(1024, "fp32", "out_grad"), (1024, "fp32", "lt"), (64, "tf32", "all")})
            fast = rows[(1024, "fp32", "out_grad")]
            self.assertEqual([round(x, 3) for x in fast["ratios"]], [1.1, 1.05, 1.2])
            self.assertAlmostEqual(fast["median"], 1.1)
            self.assertEqual(fast["verdict"], "wins every round")
            self.assertEqual(rows[(1024, "fp32", "lt")]["verdict"], "undecided")
            self.assertEqual(rows[(64, "tf32", "all")]["verdict"], "loses every round")
            out = io.StringIO()
            with redirect_stdout(out):
                self.assertEqual(matrix_table.main([d]), 0)
            self.assertIn("1024 fp32 out_grad     1.100  1.050-1.200  1.100 1.050 1.200: wins every round", out.getvalue())

    def test_a_folder_without_runs_is_exit_two(self):
        with tempfile.TemporaryDirectory() as d:
            err = io.StringIO()
            with redirect_stderr(err):
                self.assertEqual(matrix_table.main([d]), 2)
                self.assertEqual(matrix_table.main([os.path.join(d, "absent")]), 2)
            self.assertIn("no default and candidate runs", err.getvalue())


if __name__ == "__main__":
    unittest.main()
