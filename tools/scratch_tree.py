"""A scratch repository for the tools' own tests (tools/test_*.py): files
written under a fresh temporary folder, removed when the test process exits.

  root = scratch_tree({"README.md": "# Top\n", "docs/a.md": "..."}, "doc_links.")
"""
import atexit
import os
import shutil
import tempfile


def scratch_tree(files, prefix):
    """A fresh folder (its name begins with `prefix`) holding `files`: relative path -> text."""
    root = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return root
