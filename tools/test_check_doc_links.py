#!/usr/bin/python3
"""tools/check_doc_links.py: the repository's own links and cited sections
resolve, and pages made to break each rule are caught.

  python3 tools/test_check_doc_links.py        (a CTest test: check_doc_links_tests)
"""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_doc_links  # noqa: E402
from scratch_tree import scratch_tree  # noqa: E402


def tree(files):
    """A scratch repository holding `files` (relative path -> text)."""
    return scratch_tree(files, "doc_links.")


GOOD = {
    "README.md": "# Top\n\nSee [the pool](docs/pool.md#under-ulimit--v) and [cli](docs/cli.md).\n"
                 "```\n[not a link](nowhere.md)\n```\n",
    "docs/pool.md": "# Pool\n\n## Under ulimit -v\n\n## Across processes: --distributed mpi\n"
                    "Back to [the top](../README.md#top), [here](#across-processes---distributed-mpi).\n",
    "docs/cli.md": "# CLI\n\n## The allocation policies: why the frameworks differ\n",
    "configs/a.ini": "# see docs/cli.md, \"The allocation policies: why\n# the frameworks differ\").\n",
}


class TheRepository(unittest.TestCase):
    def test_every_link_and_cited_section_resolves(self):
        r = subprocess.run([sys.executable, os.path.join(HERE, "check_doc_links.py")], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


class Rules(unittest.TestCase):
    def errors(self, **changes):
        files = dict(GOOD)
        files.update({k.replace("__", "/").replace("_md", ".md").replace("_ini", ".ini"): v
                      for k, v in changes.items()})
        return check_doc_links.check(tree(files))

    def test_a_good_tree_passes(self):
        self.assertEqual(self.errors(), [])

    def test_anchors_as_github_makes_them(self):
        self.assertEqual(check_doc_links.slug("Under ulimit -v"), "under-ulimit--v")
        self.assertEqual(check_doc_links.slug("Across processes: --distributed mpi"),
                         "across-processes---distributed-mpi")
        self.assertEqual(check_doc_links.slug("Does `auto` pick well? (bench/sync_auto_bench.py)"),
                         "does-auto-pick-well-benchsync_auto_benchpy")

    def test_a_missing_file_is_caught(self):
        e = self.errors(README_md="# Top\n[gone](docs/gone.md)\n")
        self.assertEqual(e, ["README.md:2: links to docs/gone.md, which is not in the repository"])

    def test_a_missing_anchor_is_caught(self):
        e = self.errors(README_md="# Top\n[old](docs/pool.md#under-ulimit)\n")
        self.assertEqual(len(e), 1)
        self.assertIn("has no heading with that anchor", e[0])

    def test_a_missing_anchor_on_the_same_page_is_caught(self):
        e = self.errors(docs__pool_md=GOOD["docs/pool.md"] + "[x](#nowhere)\n")
        self.assertEqual(len(e), 1)
        self.assertIn("docs/pool.md:7: links to #nowhere", e[0])

    def test_a_cited_title_that_no_heading_starts_is_caught(self):
        e = self.errors(configs__a_ini="# see docs/cli.md, \"Why the frameworks differ\").\n")
        self.assertEqual(e, ['configs/a.ini:1: cites docs/cli.md, "Why the frameworks differ", '
                             'which starts none of its headings'])

    def test_a_title_running_on_is_joined_with_its_next_line(self):
        e = self.errors(configs__a_ini="// docs/cli.md, \"The allocation policies: why\n// the frameworks split\").\n")
        self.assertEqual(len(e), 1)
        self.assertIn("why the frameworks split", e[0])

    def test_a_linked_page_cited_by_title_is_checked(self):
        self.assertEqual(self.errors(docs__cli_md=GOOD["docs/cli.md"] + "[pool](pool.md), \"Under ulimit -v\".\n"), [])
        e = self.errors(docs__cli_md=GOOD["docs/cli.md"] + "[pool](pool.md), \"Under ulimit -d\".\n")
        self.assertEqual(e, ['docs/cli.md:4: cites docs/pool.md, "Under ulimit -d", which starts none of its headings'])

    def test_a_cited_page_that_is_not_there_is_caught(self):
        e = self.errors(configs__a_ini="# docs/gone.md, \"Anything\"\n")
        self.assertEqual(e, ["configs/a.ini:1: cites docs/gone.md, which is not in the repository"])


if __name__ == "__main__":
    unittest.main()
