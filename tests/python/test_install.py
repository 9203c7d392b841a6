"""`import asyncmlp` as installed by pip: ctest runs the Python tests on the
interpreter of a venv the wheel was installed into (tools/python_venv.sh), and
this file checks that the package they import is that one, at the C++
package's version."""
import importlib.metadata
import os
import re
import subprocess
import sys

import pytest

import asyncmlp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV = os.environ.get("AMLP_INSTALLED_IN")


def cmake_version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        return re.search(r"project\(asyncmlp VERSION ([0-9.]+)", f.read()).group(1)


def test_one_version_for_the_cpp_package_and_the_module():
    assert asyncmlp.__version__ == cmake_version()


@pytest.mark.skipif(not VENV, reason="run outside ctest: the package is wherever PYTHONPATH points")
def test_the_package_tested_is_the_wheel_installed_in_the_venv():
    assert os.path.realpath(sys.prefix) == os.path.realpath(VENV) and sys.prefix != sys.base_prefix
    assert os.path.realpath(asyncmlp.__file__).startswith(os.path.realpath(VENV) + os.sep), asyncmlp.__file__
    assert importlib.metadata.version("asyncmlp") == cmake_version()
    files = {str(f) for f in importlib.metadata.files("asyncmlp")}
    package = os.path.join(ROOT, "python")
    sources = {os.path.relpath(os.path.join(d, n), package) for d, _, names in os.walk(os.path.join(package, "asyncmlp"))
               for n in names if n.endswith(".py")}
    assert len(sources) > 10 and not sources - files, sorted(sources - files)  # every module of python/asyncmlp/
    assert any(re.fullmatch(r"asyncmlp/_asyncmlp\..*\.so", f) for f in files), sorted(files)


@pytest.mark.skipif(not VENV, reason="run outside ctest: no venv to start")
def test_help_from_the_venv_shows_a_bindings_documentation():
    r = subprocess.run([os.path.join(VENV, "bin", "python"), "-c", "import asyncmlp; help(asyncmlp.dot)"],
                       capture_output=True, text=True, timeout=60, env={**os.environ, "PAGER": "cat"})
    assert r.returncode == 0 and "dot(a: " in r.stdout and "a (n, k) and b (k, m)" in r.stdout, r  # with the shapes


def test_the_docs_training_loop_is_the_example_and_prints_its_lines():
    with open(os.path.join(ROOT, "examples", "readme_example.py"), encoding="utf-8") as f:
        example = f.read()
    with open(os.path.join(ROOT, "docs", "python.md"), encoding="utf-8") as f:
        page = f.read()
    code = example.split('"""', 2)[2].lstrip("\n")
    assert "```python\n" + code + "```" in page, "docs/python.md's training loop is examples/readme_example.py"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "readme_example.py")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    queued = int(re.search(r"^ops queued, not run: (\d+)$", r.stdout, re.M).group(1))
    loss, peak = map(float, re.search(r"^loss ([0-9.]+), peak ([0-9.]+) MB$", r.stdout, re.M).groups())
    # Nothing waited in the loop: most of the ten batches' ops are still queued; the
    # 'stream' policy holds about a batch (the page's peak, within half).
    assert queued > 0 and 0 < loss < 10, r.stdout
    said_mb = float(re.search(r"a peak of about\s+(\d+) MB", page).group(1))
    assert 0.5 * said_mb <= peak <= 1.5 * said_mb, (peak, said_mb)
