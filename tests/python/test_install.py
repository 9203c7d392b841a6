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
    for layer in ("asyncmlp/mxnet/__init__.py", "asyncmlp/torch/__init__.py", "asyncmlp/d2l/__init__.py"):
        assert layer in files, layer
    assert any(re.fullmatch(r"asyncmlp/_asyncmlp\..*\.so", f) for f in files), sorted(files)


@pytest.mark.skipif(not VENV, reason="run outside ctest: no venv to start")
def test_help_from_the_venv_shows_a_bindings_documentation():
    r = subprocess.run([os.path.join(VENV, "bin", "python"), "-c", "import asyncmlp; help(asyncmlp.dot)"],
                       capture_output=True, text=True, timeout=60, env={**os.environ, "PAGER": "cat"})
    assert r.returncode == 0 and "dot(" in r.stdout, r
