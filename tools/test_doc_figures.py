#!/usr/bin/python3
"""tools/doc_figures.py: every page of the repository passes; a digit changed in
any marked figure of any page fails it; pages and records made to break each
rule are caught; --write puts a record's figures in its page; and
tools/results_doc.py writes its page's markers and record.

  python3 tools/test_doc_figures.py        (a CTest test: doc_figures_tests)
"""
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import doc_figures  # noqa: E402
from scratch_tree import scratch_tree  # noqa: E402

VM = {"kind": "machine", "machine": "a 2-core VM", "command": "train_mlp --config configs/quick.ini"}


def tree(files):
    """A scratch repository holding docs/ and `files` (relative path -> text, or a dict written as JSON)."""
    root = scratch_tree({rel: json.dumps(t) if isinstance(t, dict) else t for rel, t in files.items()}, "doc_figures.")
    os.makedirs(os.path.join(root, "docs"), exist_ok=True)
    return root


def page(body):
    return "# Top\n\n<!-- figures runs -->\n" + body + "\n<!-- /figures -->\n"


def errors(files):
    root = tree(files)
    return [e for p in doc_figures.pages(root) for e in doc_figures.check_page(root, p)]


class Rules(unittest.TestCase):
    def test_a_page_as_its_record_has_it_passes(self):
        e = errors({"README.md": page("`none` runs 1.27× `batch`, +3.2 MB a batch (`--batches 100`)."),
                    "docs/figures/README.json": {"runs": dict(VM, figures=["1.27", "3.2"])}})
        self.assertEqual(e, [])

    def test_a_changed_digit_is_caught(self):
        e = errors({"README.md": page("`none` runs 1.28× `batch`, +3.2 MB a batch."),
                    "docs/figures/README.json": {"runs": dict(VM, figures=["1.27", "3.2"])}})
        self.assertEqual(e, ["README.md:4: block runs's figure 1 is 1.28; its record says 1.27"])

    def test_a_figure_added_or_dropped_is_caught(self):
        e = errors({"README.md": page("`none` runs 1.27× `batch`."),
                    "docs/figures/README.json": {"runs": dict(VM, figures=["1.27", "3.2"])}})
        self.assertEqual(e, ["README.md:3: block runs quotes 1 figures; its record holds 2"])

    def test_a_figure_outside_every_block_is_caught(self):
        for loose in ("It took 4.2 ms.", "| `none` | 0.98 |", "1.7e-7 apart", "a peak of 320 MB", "12% more",
                      "1.05x faster"):
            e = errors({"README.md": "# Top\n\n" + loose + "\n"})
            self.assertEqual(len(e), 1, (loose, e))
            self.assertIn("outside every <!-- figures --> block", e[0])

    def test_what_is_not_a_figure_passes_outside_blocks(self):
        e = errors({"README.md": "# Top\n\nOn an H200 (sm_90), Linux 5.14 or later, PyTorch 2.11, 2 cores, "
                                 "`--batches 100`, [x](docs/a_1.5.md), §11, TF32.\n\n```\nreal 0.52 s\n```\n"})
        self.assertEqual(e, [])

    def test_a_machine_record_that_names_no_run_is_caught(self):
        for missing in ("machine", "command"):
            rec = {k: v for k, v in VM.items() if k != missing}
            e = errors({"README.md": page("1.27× faster"),
                        "docs/figures/README.json": {"runs": dict(rec, figures=["1.27"])}})
            self.assertEqual(e, ["README.md:3: block runs: its record names no run (a machine and a command)"])

    def test_a_deterministic_record_names_its_check_and_it_exists(self):
        rec = {"kind": "deterministic", "command": "train_mlp", "checked_by": "tools/nothing.py", "figures": ["3.2"]}
        e = errors({"README.md": page("3.2 MB"), "docs/figures/README.json": {"runs": rec}})
        self.assertEqual(e, ["README.md:3: block runs: its record's checked_by 'tools/nothing.py' is not a file "
                             "of the repository"])

    def test_a_block_without_record_and_a_record_without_block_are_caught(self):
        e = errors({"README.md": page("1.27×"), "docs/figures/README.json": {"other": dict(VM, figures=[])}})
        self.assertEqual(e, ["README.md:3: block runs has no record in docs/figures/README.json",
                             "docs/figures/README.json: the record other has no block in README.md"])
        e = errors({"README.md": page("1.27×")})
        self.assertEqual(e[0], "README.md: marks blocks but docs/figures/README.json does not exist")

    def test_markers_that_do_not_pair_are_caught(self):
        e = errors({"README.md": "<!-- figures a -->\n<!-- figures b -->\n<!-- /figures -->\n<!-- /figures -->\n",
                    "docs/figures/README.json": {"a": dict(VM, figures=[]), "b": dict(VM, figures=[])}})
        self.assertIn("README.md:2: block b opens inside block a", e)
        self.assertIn("README.md:4: <!-- /figures --> closes no block", e)

    def test_write_puts_the_records_figures_in_the_page(self):
        root = tree({"README.md": page("`none` runs 1.27× `batch`, +3.2 MB a batch."),
                     "docs/figures/README.json": {"runs": dict(VM, figures=["1.31", "3.15"])}})
        subprocess.run([sys.executable, os.path.join(HERE, "doc_figures.py"), "--root", root, "--write"], check=True)
        with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
            self.assertIn("`none` runs 1.31× `batch`, +3.15 MB a batch.", f.read())
        self.assertEqual(doc_figures.check_page(root, "README.md"), [])


class TheRepository(unittest.TestCase):
    def test_every_page_passes(self):
        p = subprocess.run([sys.executable, os.path.join(HERE, "doc_figures.py"), "--root", ROOT],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_every_page_has_blocks_and_every_machine_block_names_its_run(self):
        for name in doc_figures.pages(ROOT):
            if name == "docs/design.md":
                continue  # it quotes no measured figure
            records = doc_figures.load_records(ROOT, name)
            self.assertTrue(records, f"{name}: no docs/figures record")

    def test_a_digit_changed_in_any_block_of_any_page_fails(self):
        """One figure of each block of each page, its last digit changed, in a copy of the repository."""
        copy = tempfile.mkdtemp(prefix="doc_figures.repo.")
        atexit.register(shutil.rmtree, copy, ignore_errors=True)
        shutil.copytree(os.path.join(ROOT, "docs"), os.path.join(copy, "docs"))
        shutil.copy(os.path.join(ROOT, "README.md"), copy)
        for f in ("tools", "tests", "bench", "train", "framework", "python", "examples"):
            os.symlink(os.path.join(ROOT, f), os.path.join(copy, f))  # the records' checked_by files
        tried = 0
        for name in doc_figures.pages(copy):
            blocks = doc_figures.Page(name, copy).blocks
            records = doc_figures.load_records(copy, name) or {}
            path = os.path.join(copy, name)
            with open(path, encoding="utf-8") as f:
                original = f.read()
            for block, (_, figs) in blocks.items():
                if not figs or records[block].get("kind") == "generated":
                    continue  # a generated block's figures are its own test's (the record's checked_by)
                n, start, end, text = figs[len(figs) // 2]
                changed = text[:-1] + ("1" if text[-1] != "1" else "2")
                lines = original.split("\n")
                lines[n - 1] = lines[n - 1][:start] + changed + lines[n - 1][end:]
                with open(path, "w", encoding="utf-8") as f:
                    f.write("\n".join(lines))
                e = doc_figures.check_page(copy, name)
                self.assertIn(f"{name}:{n}: block {block}'s figure", " ".join(e), (name, block, text, changed))
                tried += 1
            with open(path, "w", encoding="utf-8") as f:
                f.write(original)
        self.assertGreater(tried, 40)


class ResultsDoc(unittest.TestCase):
    def test_results_doc_writes_its_markers_and_record(self):
        tmp = tempfile.mkdtemp(prefix="results_doc.")
        atexit.register(shutil.rmtree, tmp, ignore_errors=True)
        run = {"mode": "batch", "status": "completed", "batches_done": 2, "samples_per_s": 1234.5, "wall_s": 0.5,
               "mem_increase_bytes": 3153920, "predicted_increase_bytes": 3153920}
        with open(os.path.join(tmp, "s.json"), "w") as f:
            json.dump([run], f)
        out = os.path.join(tmp, "docs", "results.md")
        os.makedirs(os.path.dirname(out))
        p = subprocess.run([sys.executable, os.path.join(HERE, "results_doc.py"), os.path.join(tmp, "s.json") +
                            "=The comparison: a test", "-o", out], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("<!-- figures the-comparison-a-test -->", text)
        with open(os.path.join(tmp, "docs", "figures", "results.json"), encoding="utf-8") as f:
            record = json.load(f)
        self.assertEqual(set(record), {"results", "the-comparison-a-test"})
        self.assertEqual(record["the-comparison-a-test"]["command"], "The comparison: a test")
        self.assertTrue(re.search(r"\d", record["results"]["machine"]))
        self.assertEqual(doc_figures.check_page(tmp, "docs/results.md"), [])


if __name__ == "__main__":
    unittest.main()
