#!/usr/bin/python3
"""tools/check_layout.py: the repository's layout passes, and scratch trees
made to break each rule are caught (framework/core's folders in their order,
a folder with no place, the Python module's includes).

  python3 tools/test_check_layout.py        (a CTest test: check_layout_tests)
"""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_layout.py")
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from scratch_tree import scratch_tree  # noqa: E402


def tree(files):
    """A scratch repository holding `files` (relative path -> the paths it includes)."""
    return scratch_tree({rel: "#pragma once\n" + "".join(f'#include "{inc}"\n' for inc in includes)
                         for rel, includes in files.items()}, "layout.")


def check(root, *folders):
    """check_layout.py's exit status and its error lines (the summary left off)."""
    r = subprocess.run([sys.executable, CHECK, "--root", root, *folders], capture_output=True, text=True)
    return r.returncode, [line for line in r.stdout.splitlines() if not line.startswith("layout:")]


# A tree that keeps every rule: core's folders each including lower ones.
GOOD = {
    "framework/tensor.h": [],
    "framework/asyncmlp.h": ["framework/tensor.h", "framework/nn/dense.h"],
    "framework/util/env.h": [],
    "framework/core/memory/memory.h": ["framework/core/memory/step_memory.h", "framework/util/env.h"],
    "framework/core/memory/step_memory.h": [],
    "framework/core/backend/stream.h": ["framework/core/backend/stream_sync.h"],
    "framework/core/backend/stream_sync.h": [],
    "framework/core/backend/backend.h": ["framework/core/memory/memory.h", "framework/core/backend/stream.h"],
    "framework/core/op/op.h": ["framework/core/memory/memory.h"],
    "framework/core/graph/step_capture.h": ["framework/core/op/op.h", "framework/core/backend/stream_sync.h"],
    "framework/core/queue/queue.h": ["framework/core/graph/step_capture.h", "framework/core/op/op.h"],
    "framework/core/context.h": ["framework/core/queue/queue.h", "framework/core/backend/backend.h"],
    "framework/core/tensor/enqueue.h": ["framework/core/context.h", "framework/core/queue/queue.h",
                                        "framework/tensor.h"],
    "framework/cpu/cpu_backend.h": ["framework/core/backend/backend.h"],
    "framework/nn/dense.h": ["framework/core/tensor/enqueue.h"],
    "models/mlp.h": ["framework/nn/dense.h"],
    "train/options/options.h": ["models/mlp.h"],
    "train/driver.cpp": ["train/options/options.h"],
    "python/module.cpp": ["framework/asyncmlp.h", "framework/nn/dense.h", "models/mlp.h"],
}
ALL = ("framework", "train", "models", "python")


def with_(extra):
    """GOOD with files added or their includes replaced."""
    return tree({**GOOD, **extra})


class Layout(unittest.TestCase):
    def test_the_repository_passes(self):
        rc, errors = check(REPO, *ALL)
        self.assertEqual((rc, errors), (0, []))

    def test_a_tree_that_keeps_the_order_passes(self):
        self.assertEqual(check(tree(GOOD), *ALL), (0, []))

    def test_an_upward_include_inside_core_is_an_error(self):
        # memory/ is below graph/: a pool's header may not include the step capture.
        root = with_({"framework/core/memory/memory.h": ["framework/core/graph/step_capture.h"]})
        rc, errors = check(root, "framework")
        self.assertEqual(rc, 1)
        self.assertEqual(errors, ["framework/core/memory/memory.h:2: includes framework/core/graph/step_capture.h: "
                                  "an upward include (framework/core/memory is below framework/core/graph)"])

    def test_core_own_files_are_below_tensor(self):
        root = with_({"framework/core/context.h": ["framework/core/tensor/enqueue.h"]})
        rc, errors = check(root, "framework")
        self.assertEqual(rc, 1)
        self.assertIn("an upward include (framework/core is below framework/core/tensor)", errors[0])

    def test_the_layers_above_core_may_include_any_of_its_folders(self):
        root = with_({"framework/cpu/cpu_backend.h": ["framework/core/tensor/enqueue.h",
                                                     "framework/core/memory/memory.h"]})
        self.assertEqual(check(root, "framework"), (0, []))

    def test_core_including_a_backend_is_an_error(self):
        root = with_({"framework/core/tensor/enqueue.h": ["framework/cpu/cpu_backend.h"]})
        rc, errors = check(root, "framework")
        self.assertEqual(rc, 1)
        self.assertIn("an upward include (framework/core/tensor is below framework/cpu)", errors[0])

    def test_a_folder_with_no_place_is_an_error(self):
        root = with_({"framework/core/extra/thing.h": ["framework/core/memory/memory.h"]})
        rc, errors = check(root, "framework")
        self.assertEqual(rc, 1)
        self.assertEqual(errors, ["framework/core/extra/thing.h: its folder framework/core/extra has no place "
                                  "in the layers (LAYERS)"])

    def test_models_sit_above_nn_and_below_train(self):
        root = with_({"framework/nn/dense.h": ["models/mlp.h"], "models/mlp.h": ["train/options/options.h"]})
        rc, errors = check(root, "framework", "models")
        self.assertEqual(rc, 1)
        self.assertEqual(len(errors), 2)
        self.assertIn("an upward include (framework/nn is below models)", errors[0])
        self.assertIn("an upward include (models is below train/options)", errors[1])

    def test_python_includes_only_what_a_program_sees(self):
        root = with_({"python/module.cpp": ["framework/core/context.h", "train/options/options.h",
                                            "framework/util/env.h", "framework/asyncmlp.h"]})
        rc, errors = check(root, "python")
        self.assertEqual(rc, 1)
        self.assertEqual(len(errors), 3)
        for e, what in zip(errors, ("framework/core/context.h", "train/options/options.h", "framework/util/env.h")):
            self.assertIn(f"includes {what}: python includes only the public headers and framework/nn, models", e)

    def test_nothing_below_includes_python(self):
        root = with_({"train/driver.cpp": ["python/module.cpp"]})
        rc, errors = check(root, "train")
        self.assertEqual(rc, 1)
        self.assertIn("an upward include (train is below python)", errors[0])


if __name__ == "__main__":
    unittest.main()
