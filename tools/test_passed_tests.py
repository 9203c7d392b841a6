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


if __name__ == "__main__":
    unittest.main()
