#!/usr/bin/python3
"""The tests that passed, per build, from what `bash tools/test.sh` (or ctest)
printed, and the names one log passed that another did not: so a change to
the test command (executables merged, sizes shrunk) shows it lost no test.

  bash tools/test.sh 2>&1 | tee new.log
  python3 tools/passed_tests.py new.log                 # count per build
  python3 tools/passed_tests.py --lost old.log new.log  # passed in old, not in new; exit 1 if any

A log's sections follow test.sh's lines "tests (release build)", "tests under
ASan+UBSan" and "tests under TSan" (a plain ctest log is one release section).
GoogleTest's "  # GetParam() = ..." suffix is dropped, and a parameter named by
its bytes ("16-byte object <3D-25 ...>", which hold addresses that change from
build to build) is compared by count: so many such names passed in each log.
"""
import argparse
import collections
import re
import sys

SECTIONS = (("tests under ASan", "asan"), ("tests under TSan", "tsan"), ("tests (release build)", "release"))
PASSED = re.compile(r"Test +#\d+: (.*?) \.{3,}.*\s+Passed\s")
BYTES = re.compile(r"(\d+)-byte object <[0-9A-F -]+>")


def normal(name):
    """A test's name without what changes from build to build."""
    name = re.sub(r"  # GetParam\(\) = .*", "", name).strip()
    return BYTES.sub(r"\1-byte object <...>", name)


def passed(lines):
    """{section: Counter of the (normal) names of the tests that passed} over a log's lines."""
    out = {"release": collections.Counter(), "asan": collections.Counter(), "tsan": collections.Counter()}
    section = "release"
    for line in lines:
        for marker, name in SECTIONS:
            if marker in line and "Test #" not in line:
                section = name
        m = PASSED.search(line)
        if m:
            out[section][normal(m.group(1))] += 1
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lost", action="store_true", help="OLD NEW: the names OLD passed and NEW did not")
    ap.add_argument("logs", nargs="+")
    a = ap.parse_args(argv)
    if not a.lost:
        for log in a.logs:
            with open(log, errors="replace") as f:
                p = passed(f)
            print(log + ": " + ", ".join(f"{k} {sum(v.values())}" for k, v in p.items()))
        return 0
    if len(a.logs) != 2:
        ap.error("--lost takes OLD NEW")
    with open(a.logs[0], errors="replace") as f:
        old = passed(f)
    with open(a.logs[1], errors="replace") as f:
        new = passed(f)
    lost = 0
    for k in old:
        gone = old[k] - new[k]
        lost += sum(gone.values())
        print(f"{k}: {sum(old[k].values())} passed in {a.logs[0]}, {sum(new[k].values())} in {a.logs[1]}, "
              f"{sum(gone.values())} lost")
        for n, c in sorted(gone.items()):
            print("  lost: " + n + (f" (x{c})" if c > 1 else ""))
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
