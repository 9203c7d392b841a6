#!/usr/bin/python3
"""tools/passed_tests.py on made-up logs: sections, the GetParam suffix, a lost name."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import passed_tests  # noqa: E402

LOG = """==> [  10s] tests (release build)
1/3 Test #1: Queue.RunsInOrder ......................   Passed    0.01 sec
2/3 Test #2: Ops/Grad.Check/relu  # GetParam() = 8-byte object <00-FF> ....   Passed    0.02 sec
3/3 Test #3: Cuda.Runs ..............................***Skipped   0.01 sec
4/5 Test #4: Bad/In.Fails/16-byte object <3D-25 94-E9> ....   Passed    0.01 sec
5/5 Test #5: Bad/In.Fails/16-byte object <45-25 94-E9> ....   Passed    0.01 sec
==> [ 200s] tests under ASan+UBSan
1/2 Test #1: Queue.RunsInOrder ......................   Passed    0.05 sec
2/2 Test #2: Ops/Grad.Check/relu  # GetParam() = 8-byte object <11-EE> ....***Failed    0.02 sec
==> [ 400s] tests under TSan
1/1 Test #1: Queue.RunsInOrder ......................   Passed    0.05 sec
"""


def entry(n, name, output, result):
    return (f"{n}/9 Testing: {name}\n{n}/9 Test: {name}\nCommand: \"/b/t\"\nDirectory: /b\n\"{name}\" start time: x\n"
            f"Output:\n----------------------------------------------------------\n{output}<end of output>\n"
            f"Test time =   0.01 sec\n----------------------------------------------------------\n{result}\n"
            f"\"{name}\" end time: x\n\"{name}\" time elapsed: 00:00:00\n"
            "----------------------------------------------------------\n\n")


# One case per ctest entry (gtest_discover_tests): ctest names a parameter by its value.
PER_CASE = "Start testing: x\n----------------------------------------------------------\n" + "".join([
    entry(1, "Queue.RunsInOrder", "[ RUN      ] Queue.RunsInOrder\n[       OK ] Queue.RunsInOrder (0 ms)\n", "Test Passed."),
    entry(2, 'Cli/Bad.Fails/"--bogus"', "[ RUN      ] Cli/Bad.Fails/0\n[       OK ] Cli/Bad.Fails/0 (3 ms)\n", "Test Passed."),
    entry(3, "Cuda.Runs", "[ RUN      ] Cuda.Runs\n[  SKIPPED ] Cuda.Runs (0 ms)\n", "Test Passed."),
    entry(4, "mpi_demo", "rank 0: loss 0.5\n", "Test Passed."),
    entry(5, "Leak.Found", "[ RUN      ] Leak.Found\n[       OK ] Leak.Found (0 ms)\nLeakSanitizer: 8 bytes\n", "Test Failed."),
]) + "End testing: x\n"
# The same cases in two shards of one executable.
SHARDED = "Start testing: x\n" + "".join([
    entry(1, "test_a.shard1of2", "[ RUN      ] Queue.RunsInOrder\n[       OK ] Queue.RunsInOrder (0 ms)\n"
          "[ RUN      ] Cuda.Runs\n[  SKIPPED ] Cuda.Runs (0 ms)\n", "Test Passed."),
    entry(2, "test_a.shard2of2", "[ RUN      ] Cli/Bad.Fails/0\n[       OK ] Cli/Bad.Fails/0 (3 ms)\n"
          "[ RUN      ] Leak.Found\n[       OK ] Leak.Found (0 ms)\n", "Test Passed."),
    entry(3, "mpi_demo", "rank 0: loss 0.5\n", "Test Passed."),
]) + "End testing: x\n"


class PassedTests(unittest.TestCase):
    def test_sections_and_the_param_suffix(self):
        p = passed_tests.passed(LOG.splitlines())
        self.assertEqual(set(p["release"]), {"Queue.RunsInOrder", "Ops/Grad.Check/relu", "Bad/In.Fails/16-byte object <...>"})
        self.assertEqual(p["release"]["Bad/In.Fails/16-byte object <...>"], 2)
        self.assertEqual(set(p["asan"]), {"Queue.RunsInOrder"})
        self.assertEqual(set(p["tsan"]), {"Queue.RunsInOrder"})

    def test_lost_names_fail(self):
        with tempfile.TemporaryDirectory() as d:
            old, new = os.path.join(d, "old.log"), os.path.join(d, "new.log")
            with open(old, "w") as f:
                f.write(LOG)
            with open(new, "w") as f:
                f.write(LOG.replace("Test #1: Queue.RunsInOrder", "Test #1: Queue.Renamed"))
            self.assertEqual(passed_tests.main(["--lost", old, old]), 0)
            self.assertEqual(passed_tests.main(["--lost", old, new]), 1)
            with open(new, "w") as f:  # one of the two byte-named cases failed
                f.write(LOG.replace("<45-25 94-E9> ....   Passed", "<45-25 94-E9> ....***Failed"))
            self.assertEqual(passed_tests.main(["--lost", old, new]), 1)

    def test_ctest_logs_name_cases_as_googletest_does(self):
        per_case = passed_tests.passed_in_ctest_log(PER_CASE.splitlines(True))
        self.assertEqual(set(per_case), {"Queue.RunsInOrder", "Cli/Bad.Fails/0", "mpi_demo"})  # skipped, failed: not passed
        sharded = passed_tests.passed_in_ctest_log(SHARDED.splitlines(True))
        self.assertEqual(set(sharded), {"Queue.RunsInOrder", "Cli/Bad.Fails/0", "mpi_demo", "Leak.Found"})
        failed_shard = passed_tests.passed_in_ctest_log(SHARDED.replace("Test Passed.\n\"test_a.shard2of2", "Test Failed.\n\"test_a.shard2of2").splitlines(True))
        self.assertEqual(set(failed_shard), {"Queue.RunsInOrder", "mpi_demo"})  # a failed shard passes none of its cases

    def test_checkouts_compare_build_by_build(self):
        with tempfile.TemporaryDirectory() as d:
            def checkout(name, logs):
                for build, text in logs.items():
                    os.makedirs(os.path.join(d, name, build, "Testing", "Temporary"))
                    with open(os.path.join(d, name, build, "Testing", "Temporary", "LastTest.log"), "w") as f:
                        f.write(text)
                return os.path.join(d, name)
            old = checkout("old", {"build": PER_CASE, "build-asan": PER_CASE})
            new = checkout("new", {"build": PER_CASE, "build-asan": SHARDED})
            self.assertEqual(passed_tests.main(["--lost", old, new]), 0)  # sharding lost nothing, and LSan's case now passes
            self.assertEqual(passed_tests.main(["--lost", new, old]), 1)  # Leak.Found
            self.assertEqual(passed_tests.main([os.path.join(new, "build-asan")]), 0)
            self.assertEqual(passed_tests.load(os.path.join(new, "build-asan")), {"asan": passed_tests.passed_in_ctest_log(SHARDED.splitlines(True))})
            gone = checkout("gone", {"build": PER_CASE})
            self.assertEqual(passed_tests.main(["--lost", old, gone]), 1)  # a build that did not run lost its tests
            with self.assertRaises(SystemExit):
                passed_tests.load(d)  # no build folder there


if __name__ == "__main__":
    unittest.main()
