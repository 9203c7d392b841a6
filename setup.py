"""Builds `import asyncmlp` for pip (`pip wheel .`, `pip install .`): the module
through the project's CMake build, then the package python/asyncmlp/ with it.

The CMake build folder: $ASYNCMLP_BUILD_DIR when set (the test command points it
at its release build, whose module is already built: nothing recompiles), else
build-wheel/ beside this file, configured once (Release, no benchmarks).
"""
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.abspath(os.environ.get("ASYNCMLP_BUILD_DIR") or os.path.join(ROOT, "build-wheel"))


def version():
    """CMakeLists.txt's project(asyncmlp VERSION x.y.z): the C++ package's and the wheel's."""
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(asyncmlp VERSION ([0-9.]+)", f.read())
    if not m:
        sys.exit("setup.py: no `project(asyncmlp VERSION ...)` in CMakeLists.txt")
    return m.group(1)


class CMakeBuild(build_ext):
    """The extension is CMake's target asyncmlp_python (python/CMakeLists.txt)."""

    def build_extension(self, ext):
        if not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")):
            args = ["-DCMAKE_BUILD_TYPE=Release", "-DASYNCMLP_BENCH=OFF", f"-DPython_EXECUTABLE={sys.executable}"]
            if shutil.which("ninja"):
                args += ["-G", "Ninja"]
            subprocess.run(["cmake", "-S", ROOT, "-B", BUILD, *args], check=True)
        subprocess.run(["cmake", "--build", BUILD, "--target", "asyncmlp_python", "-j", str(os.cpu_count() or 1)],
                       check=True)
        built = os.path.join(BUILD, "python", "asyncmlp")
        names = [n for n in os.listdir(built) if n.startswith("_asyncmlp.") and n.endswith(".so")]
        if len(names) != 1:
            sys.exit(f"setup.py: expected one _asyncmlp.*.so in {built}, found {names}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(built, names[0]), target)


setup(
    version=version(),
    package_dir={"": "python"},
    packages=find_packages(where="python"),  # asyncmlp and its layers, sub-packages included
    package_data={"asyncmlp": ["*.pyi", "py.typed"]},
    ext_modules=[Extension("asyncmlp._asyncmlp", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # setuptools' own scratch (build/, *.egg-info) in the CMake build folder, not in
    # the source tree (whose build/ is the project's release build).
    options={"build": {"build_base": os.path.join(BUILD, "setuptools")},
             "egg_info": {"egg_base": os.path.join(BUILD, "setuptools")}},
)
