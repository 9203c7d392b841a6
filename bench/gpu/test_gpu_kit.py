#!/usr/bin/python3
"""bench/gpu/gpu_kit.py's budget, walked here without a GPU: --plan lists
every step of the three commands with its expected time and timeout, and a
dry run of each (ASYNCMLP_KIT_DRY=1) gives each step the timeout the budget
leaves it and ends at the sum of the expected times (quick 275 s, matrix
268 s, deep 285 s of 300); with KIT_BUDGET=200, quick leaves out the steps
that no longer fit. A change to a step's expected time or bound, or to the
arithmetic, fails here (docs/gpu.md, "The GPU kit")."""
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import unittest

KIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu_kit.py")

# Per command: each step, its expected seconds, its bound and the timeout a
# dry run of the whole command gives it within 300 s.
STEPS = {
    "quick": [("unpack", 15, 90, 90), ("tests", 90, 150, 150), ("perf64", 60, 110, 110),
              ("perf1024", 65, 120, 120), ("floor", 30, 60, 60), ("trace", 15, 40, 30)],
    "matrix": [("mcheck", 50, 90, 90), ("opcost", 20, 45, 45), ("matrix", 180, 240, 220), ("mtable", 3, 20, 20),
               ("mpi", 12, 60, 37), ("goals", 3, 20, 20)],
    "deep": [("sanitize", 110, 160, 160), ("others", 60, 120, 120), ("chapter", 20, 60, 60), ("normals", 15, 45, 45),
             ("policies", 25, 60, 60), ("hostwork", 25, 60, 60), ("sweep", 30, 75, 35)],
}
TOTALS = {"quick": 275, "matrix": 268, "deep": 285}
SETTINGS = ("BUILD", "ARCHIVE", "LOGS", "OUT", "ROUNDS", "MATRIX_ROUNDS", "MODES_ONLY", "TORCH_CAPTURE", "TESTS_ONLY",
            "KIT_BUDGET", "ASYNCMLP_KIT_DRY", "SANITIZE_ENV", "ASYNCMLP_SEGMENTS", "ASYNCMLP_LT", "ASYNCMLP_CANDIDATES")


class GpuKit(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def kit(self, *args, **env):
        """The kit's exit status and output, with no build and no archive (a machine without either)."""
        full = {k: v for k, v in os.environ.items() if k not in SETTINGS}
        full.update(BUILD=os.path.join(self.tmp.name, "no-build"), ARCHIVE=os.path.join(self.tmp.name, "none.tar.xz"),
                    LOGS=os.path.join(self.tmp.name, "logs"), **env)
        p = subprocess.run([sys.executable, KIT, *args], env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=120)
        return p.returncode, p.stdout

    def test_the_plan_lists_every_step_with_its_times(self):
        rc, out = self.kit("--plan")
        self.assertEqual(rc, 0)
        blocks = re.split(r"\n(?=bench/gpu/gpu_kit\.py )", out)
        for cmd, steps in STEPS.items():
            block = next(b for b in blocks if b.startswith(f"bench/gpu/gpu_kit.py {cmd}:"))
            self.assertIn(f"<= 300 s, about {TOTALS[cmd]} s expected", block)
            self.assertEqual(TOTALS[cmd], sum(s[1] for s in steps))
            listed = re.findall(r"^  (\w+) +about +(\d+) s, timeout +(\d+) s", block, re.M)
            self.assertEqual(listed, [(s, str(e), str(b)) for s, e, b, _ in steps])

    def test_each_dry_run_walks_the_budget(self):
        for cmd, steps in STEPS.items():
            with self.subTest(cmd=cmd):
                rc, out = self.kit(cmd, ASYNCMLP_KIT_DRY="1")
                self.assertIn(f"== {cmd}: {TOTALS[cmd]} s of 300\n", out)
                self.assertEqual(re.findall(r"^== (\w+) \(timeout (\d+) s\)", out, re.M),
                                 [(s, str(t)) for s, _, _, t in steps])
                self.assertEqual(re.findall(r"^   (\w+) took (\d+) s$", out, re.M), [(s, str(e)) for s, e, _, _ in steps])
                self.assertNotIn("not started", out)
                # Without a build, quick's unpack and tests fail; matrix and deep only print their commands.
                self.assertEqual(rc, 1 if cmd == "quick" else 0)
                logs = os.path.join(self.tmp.name, "logs")
                with tarfile.open(os.path.join(logs, "back", f"{cmd}.tar.xz")) as t:
                    self.assertIn(f"{cmd}/results.txt", t.getnames())
                with open(os.path.join(logs, cmd, "dry.txt")) as f:
                    dry = f.read()
                self.assertEqual(re.findall(r"^-- (\w+): timeout (\d+) s$", dry, re.M),
                                 [(s, str(t)) for s, _, _, t in steps])

    def test_a_short_budget_leaves_out_what_no_longer_fits(self):
        rc, out = self.kit("quick", ASYNCMLP_KIT_DRY="1", KIT_BUDGET="200")
        self.assertEqual(rc, 1)
        self.assertIn("== perf64 (timeout 85 s)", out)
        self.assertIn("FAIL perf1024 not started: 25 s left of 200, it takes about 65 s", out)
        self.assertIn("FAIL floor not started: 25 s left of 200, it takes about 30 s", out)
        self.assertIn("== trace (timeout 25 s)", out)
        self.assertIn("== quick: 180 s of 200\n", out)

    def test_named_steps_and_bad_usage(self):
        rc, out = self.kit("quick", "perf1024", "unpack", ASYNCMLP_KIT_DRY="1")
        self.assertEqual(re.findall(r"^== (\w+) \(timeout", out, re.M), ["unpack", "perf1024"])
        self.assertIn("== quick: 80 s of 300\n", out)
        for args in ((), ("nonsense",), ("quick", "nostep"), ("table",), ("table", "a", "b", "c")):
            self.assertEqual(self.kit(*args)[0], 2, args)


if __name__ == "__main__":
    unittest.main()
