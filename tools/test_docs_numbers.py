#!/usr/bin/python3
"""The numbers the README quotes from a run, checked against the page that
run generated (docs/results.md, written by tools/results_doc.py from
tools/run.sh's outputs): the h/d = 1/2 table cell by cell, and the figures
its prose takes from that table and from the sweep's d. Regenerating
docs/results.md without updating the README (or editing either alone)
fails here, so neither goes stale silently.

  python3 tools/test_docs_numbers.py        (a CTest test: docs_numbers_tests)
"""
import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def table_rows(text, first_header):
    """The rows (lists of cells) of the first Markdown table whose header starts with `first_header`."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("| " + first_header + " |"):
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")])
            return rows
    return []


class ReadmeAgainstResults(unittest.TestCase):
    def setUp(self):
        self.readme = read("README.md")
        self.results = read("docs/results.md")
        self.ours = {r[0]: r for r in table_rows(self.readme, "mode")}
        sweep = table_rows(self.results, "h/d")
        self.half = {r[1]: r for r in sweep if r[0] == "0.5"}

    def test_the_half_table_is_the_sweeps_row_for_row(self):
        self.assertTrue(self.ours, "no `| mode |` table in the README")
        self.assertEqual(set(self.ours), set(self.half), "the README's modes against the sweep's at h/d = 0.5")
        for mode, r in self.ours.items():
            s = self.half[mode]
            # README: mode | h/d | samples/s m / p | speed-up m / p | backlog m / p | mem m / p
            # results.md: h/d | mode | h/d meas | samples/s | pred | m/p | speed-up | pred | backlog | pred | mem | pred | m/p
            want = [mode, s[2], f"{s[3]} / {s[4]}", f"{s[6]} / {s[7]}", f"{s[8]} / {s[9]}", f"{s[10]} / {s[11]}"]
            self.assertEqual(r, want, f"README's row for {mode}")

    def test_the_prose_quotes_the_table(self):
        none = self.half["`none`"]
        self.assertIn(f"`none` queues {none[8]} batches ({float(none[10]):.0f} MB)", self.readme)
        wins = self.half["`every=10`"][6], self.half["`bounded`"][6]
        self.assertIn(f"`every=10` and `bounded` win {wins[0]}× and {wins[1]}× over `batch`", self.readme)

    def test_the_sweeps_d(self):
        m = re.search(r"d = ([0-9.]+) ms per batch \(synchronized\)", self.results)
        self.assertIsNotNone(m, "docs/results.md's sweep section gives no d")
        self.assertIn(f"d = {float(m.group(1)):.1f} ms", self.readme)


if __name__ == "__main__":
    unittest.main()
