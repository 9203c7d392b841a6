"""examples/chapter.ipynb, the chapter as its readers meet it: executed headless
(nbclient, as Jupyter would run it) at --quick's sizes, every section prints the
book's lines and the training section draws its memory plot inline; in git its
outputs are stripped."""
import json
import os
import sys

import pytest

if os.environ.get("AMLP_INSTALLED_IN"):  # ctest, in the test command, which installs them: no skip
    import nbclient
    import nbformat
else:
    nbformat = pytest.importorskip("nbformat", reason="python3-nbformat is not installed (the test command installs it)")
    nbclient = pytest.importorskip("nbclient", reason="python3-nbclient is not installed (the test command installs it)")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOK = os.path.join(ROOT, "examples", "chapter.ipynb")


def read():
    with open(NOTEBOOK, encoding="utf-8") as f:
        return nbformat.read(f, as_version=4)


def test_the_notebook_is_kept_without_outputs():
    nb = read()
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)


def text_of(cell):
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def test_the_notebook_runs_every_section_and_draws_the_memory(monkeypatch, tmp_path):
    monkeypatch.setenv("AMLP_NOTEBOOK_QUICK", "1")
    monkeypatch.setenv("AMLP_NOTEBOOK_DEVICE", "cpu")
    # The kernel on this interpreter (the venv's, with the installed package), ahead of
    # Debian's kernel spec of the same name, which starts /usr/bin/python3.
    spec = tmp_path / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    nb = read()
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": os.path.dirname(NOTEBOOK)}}).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    out = "".join(text_of(c) for c in code)
    for line in ("asyncmlp ", "batch ", "time per epoch", "increased memory:"):
        assert line in out, line
    sections = [c.source for c in code if c.source.startswith("chapter.section_")]
    assert sections == [f"chapter.section_{s.replace('-', '_')}(dev, args, out)"
                        for s in ("asynchrony", "blockers", "sync-vs-async", "training", "exercises")]
    images = [o for c in code for o in c.outputs if o.output_type == "display_data" and "image/png" in o.data]
    assert len(images) == 1, "the training section's memory plot, inline"
