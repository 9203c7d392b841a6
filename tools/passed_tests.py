#!/usr/bin/python3
"""The tests that passed, per build, and the names one run passed that another
did not: so a change to the test command (executables merged or sharded, sizes
shrunk) shows it lost no test.

  python3 tools/passed_tests.py CHECKOUT                 # count per build
  python3 tools/passed_tests.py --lost OLD_CHECKOUT NEW_CHECKOUT   # exit 1 if any lost
  python3 tools/passed_tests.py --lost old.log new.log   # the same from test.sh's output

A checkout (or one build folder) is read from each build's own record of its
last ctest run, build*/Testing/Temporary/LastTest.log: build/ is "release",
build-asan/ "asan", build-tsan/ "tsan". There a test is named by GoogleTest's
own "[       OK ] Suite.Name" line, inside a ctest entry that passed, so a
suite run as one ctest test per case and one run in shards
(test_train.shard3of16) name their cases alike, and a parameterised case is
Suite/Param.Name/0 whatever ctest called it; a ctest entry with no GoogleTest
case in it (a script, the MPI demo) is named by ctest's name.

test.sh's printed output names only ctest's entries: its sections follow the
lines "tests (release build)", "tests under ASan+UBSan" and "tests under TSan"
(a plain ctest log is one release section). GoogleTest's "  # GetParam() = ..."
suffix is dropped, and a parameter named by its bytes ("16-byte object <3D-25
...>", which hold addresses that change from build to build) is compared by
count: so many such names passed in each log.
"""
import argparse
import collections
import os
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


ENTRY = re.compile(r"^\d+/\d+ Testing: (.*)$")
ENTRY_PASSED = "Test Passed."
GTEST_OK = re.compile(r"^\[       OK \] (\S+) \(\d+ ms\)$")
GTEST_RUN = "[ RUN      ] "
BUILDS = (("build", "release"), ("build-asan", "asan"), ("build-tsan", "tsan"))


def passed_in_ctest_log(lines):
    """Counter of the names that passed in one LastTest.log: GoogleTest's cases
    inside the entries ctest passed, and ctest's name for an entry that ran none."""
    out = collections.Counter()
    entry, ok, ran_gtest = None, [], False

    def close(result):
        if entry is None or result != ENTRY_PASSED:
            return
        if ran_gtest:
            out.update(ok)
        else:
            out[normal(entry)] += 1

    result = None
    for raw in lines:
        line = raw.rstrip("\n")
        m = ENTRY.match(line)
        if m:
            close(result)
            entry, ok, ran_gtest, result = m.group(1), [], False, None
            continue
        if entry is None:
            continue
        if line.startswith(GTEST_RUN):
            ran_gtest = True
        m = GTEST_OK.match(line)
        if m:
            ok.append(normal(m.group(1)))
        if line.startswith("Test ") and line.endswith(".") and " " not in line[5:]:
            result = line  # "Test Passed." / "Test Failed." / ...; the last one in an entry counts
    close(result)
    return out


def passed_in_checkout(path):
    """{build: Counter} from a checkout's build folders, or from one build folder."""
    out = {}
    dirs = [(os.path.join(path, d), k) for d, k in BUILDS]
    if os.path.isfile(os.path.join(path, "Testing", "Temporary", "LastTest.log")):
        base = os.path.basename(os.path.normpath(path))
        dirs = [(path, dict(BUILDS).get(base, "release"))]
    for d, k in dirs:
        log = os.path.join(d, "Testing", "Temporary", "LastTest.log")
        if os.path.isfile(log):
            with open(log, errors="replace") as f:
                out[k] = passed_in_ctest_log(f)
    if not out:
        raise SystemExit(f"passed_tests.py: {path}: no build*/Testing/Temporary/LastTest.log (has ctest run there?)")
    return out


def load(path):
    """{build: Counter}: from a checkout or build folder, or from test.sh's output."""
    if os.path.isdir(path):
        return passed_in_checkout(path)
    with open(path, errors="replace") as f:
        return passed(f)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lost", action="store_true", help="OLD NEW: the names OLD passed and NEW did not")
    ap.add_argument("logs", nargs="+")
    a = ap.parse_args(argv)
    if not a.lost:
        for log in a.logs:
            p = load(log)
            print(log + ": " + ", ".join(f"{k} {sum(v.values())}" for k, v in p.items()))
        return 0
    if len(a.logs) != 2:
        ap.error("--lost takes OLD NEW")
    old, new = load(a.logs[0]), load(a.logs[1])
    lost = 0
    for k in old:
        new.setdefault(k, collections.Counter())
        gone = old[k] - new[k]
        lost += sum(gone.values())
        print(f"{k}: {sum(old[k].values())} passed in {a.logs[0]}, {sum(new[k].values())} in {a.logs[1]}, "
              f"{sum(gone.values())} lost")
        for n, c in sorted(gone.items()):
            print("  lost: " + n + (f" (x{c})" if c > 1 else ""))
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
