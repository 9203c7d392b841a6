#!/usr/bin/env bash
# check_install.sh BUILD — the installed library as a program outside the tree
# sees it: `cmake --install BUILD` into a fresh temporary prefix, examples/
# (the README's example, its own CMakeLists.txt: find_package(asyncmlp)) built
# against that prefix and run, and its two figures checked against what the
# README says of them ("about 140 ops still queued", "a peak of about 320
# MB"), so neither the package nor the README's numbers go stale silently.
# Called by tools/test.sh; exit 1 on any failure, with the reason.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: check_install.sh BUILD}
# The example is the README's, word for word (the file adds only its header comment).
/usr/bin/python3 - "$root" <<'PY' || exit 1
import re, sys
root = sys.argv[1]
readme = open(root + "/README.md").read()
block = re.search(r"## Using the library\n\n```cpp\n(.*?)```", readme, re.S).group(1)
code = open(root + "/examples/readme_example.cpp").read()
if not code.endswith(block):
    print("check_install.sh: examples/readme_example.cpp is not the README's example", file=sys.stderr)
    sys.exit(1)
PY
prefix=$(mktemp -d)
example=$(mktemp -d)
trap 'rm -rf "$prefix" "$example"' EXIT
cmake --install "$root/$build" --prefix "$prefix" >"$example/install.log" ||
  { cat "$example/install.log" >&2; exit 1; }
for f in lib/libasyncmlp.a lib/cmake/asyncmlp/asyncmlpConfig.cmake include/asyncmlp/framework/asyncmlp.h bin/train_mlp; do
  [ -e "$prefix/$f" ] || { echo "check_install.sh: the install has no $f" >&2; exit 1; }
done
if find "$prefix/include" -name '*.h' -exec grep -l '#include "framework/core/' {} + 2>/dev/null | grep -q .; then
  echo "check_install.sh: an installed header includes framework/core/, which is not installed" >&2
  exit 1
fi
cmake -S "$root/examples" -B "$example/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >"$example/configure.log" 2>&1 ||
  { cat "$example/configure.log" >&2; exit 1; }
cmake --build "$example/build" >"$example/build.log" 2>&1 || { cat "$example/build.log" >&2; exit 1; }
out=$("$example/build/readme_example")
echo "$out"
# "ops queued, not run: 142" and "loss 0.111698, peak 323.3 MB"
ops=$(sed -n 's/^ops queued, not run: \([0-9]*\)$/\1/p' <<<"$out")
peak=$(sed -n 's/^loss .*, peak \([0-9.]*\) MB$/\1/p' <<<"$out")
[ -n "$ops" ] && [ -n "$peak" ] || { echo "check_install.sh: the example printed something else" >&2; exit 1; }
# The README: 14 ops a batch, ten batches queued (a few may have run); a
# batch's buffers 32 MB, ten alive at once.
if ((ops < 120 || ops > 150)); then
  echo "check_install.sh: the example left $ops ops queued; the README says about 140 (update one or the other)" >&2
  exit 1
fi
if ! awk -v p="$peak" 'BEGIN { exit !(p >= 280 && p <= 360) }'; then
  echo "check_install.sh: the example's peak is $peak MB; the README says about 320 MB (update one or the other)" >&2
  exit 1
fi
# import asyncmlp from the prefix, where the build made the Python module.
if [ -d "$root/$build/python/asyncmlp" ]; then
  site="$prefix/lib/python3/dist-packages"
  [ -d "$site/asyncmlp" ] || site=$(dirname "$(find "$prefix" -type d -name asyncmlp -path '*dist-packages*' | head -1)")
  got=$(cd / && PYTHONPATH="$site" /usr/bin/python3 -c \
        'import asyncmlp as am; x = am.ones((2, 2)); print(am.sum(x @ x).item(), am.__file__)') ||
    { echo "check_install.sh: import asyncmlp from $site failed" >&2; exit 1; }
  case "$got" in
    "8.0 $prefix"/*) echo "import asyncmlp from the prefix: sum(ones(2,2) @ ones(2,2)) = ${got%% *}" ;;
    *) echo "check_install.sh: import asyncmlp from the prefix printed '$got'" >&2; exit 1 ;;
  esac
fi
