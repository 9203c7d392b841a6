#!/usr/bin/env bash
# `import asyncmlp` installed as a Python user installs it: `pip wheel .` (setup.py,
# through the CMake build folder BUILD, whose module is already built), then the
# wheel installed into a fresh virtual environment, BUILD/venv (seeing Debian's
# numpy and pytest: --system-site-packages). The Python tests (ctest's python_*
# entries) run on that environment's interpreter, against the installed package.
#
#   bash tools/python_venv.sh build     # build/wheel/asyncmlp-*.whl, build/venv
set -euo pipefail
[ $# = 1 ] || { echo "usage: python_venv.sh BUILD_DIR" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
py=/usr/bin/python3
rm -rf "$build/wheel"
# No package index is reachable or needed: Debian's setuptools and wheel build it.
ASYNCMLP_BUILD_DIR=$build "$py" -m pip wheel --quiet --no-build-isolation --no-deps --no-index \
  --wheel-dir "$build/wheel" "$root"
wheel=$(ls "$build"/wheel/asyncmlp-*.whl)
# No pip of its own (ensurepip's copy was half this script's time): Debian's, seen
# through --system-site-packages, installs into the environment.
"$py" -m venv --clear --without-pip --system-site-packages "$build/venv"
"$build/venv/bin/python" -m pip install --quiet --no-deps --no-index "$wheel"
"$build/venv/bin/python" -c 'import asyncmlp, sys; print(f"asyncmlp {asyncmlp.__version__} installed in {sys.prefix}: {asyncmlp.__file__}")'
