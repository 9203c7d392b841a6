#!/usr/bin/python3
"""Checks the source layout: no include points up a layer.

  check_layout.py [--root DIR] FOLDER...

FOLDER: folders to check, relative to the repository root (the default:
framework, train, models and python). Every .h .cpp .cu .cuh file under them
is checked:
  - an include of a higher layer, or of a sibling of the same layer (cpu and
    cuda do not include each other), is an error;
  - a file in a folder LAYERS does not place (a new folder of framework/core,
    say) is an error: every folder has its place in the order;
  - a public header (framework/*.h) includes only public headers, except the
    umbrella asyncmlp.h, which also includes the layers of nn/;
  - no framework file includes the umbrella framework/asyncmlp.h;
  - a program's folder (PROGRAMS: python/, the Python module) includes only
    what a program outside the tree sees: the public headers, nn/'s layers,
    models/.
Files go by concept, not by length: a file long because it is one thing is
fine. framework/core's folders are sub-layers in their own order
(docs/design.md, "The engine's folders"); train/'s are its stages' order.
Prints one line per error and exits 1 if there was any, 0 otherwise; bad
arguments exit 2.
"""
import argparse
import os
import re
import sys

# The layers, lowest first: a file may include its own folder and the
# folders of lower layers. framework/*.h (the public headers) are the
# interface: any file may include them. A folder's file goes by the longest
# folder here that holds it.
LAYERS = [
    ("framework/util", 0),      # not the engine: parsing, files, JSON, the trace, the environment
    # The engine, framework/core, folder by folder: to the layers above it
    # one layer, inside it an order (docs/design.md, "The engine's folders").
    ("framework/core/memory", 1),   # the pools, Storage and its engine state, host memory, a step's memory
    ("framework/core/backend", 2),  # what a backend implements: its memory, stream, kernels, collectives
    ("framework/core/op", 3),       # what a queue runs: an op's buffers, scalars, traits, bound kernel
    ("framework/core/graph", 4),    # step graphs: a steady step recognised, held, launched as one
    ("framework/core/queue", 5),    # the queues, their workers, the ops they hold
    ("framework/core", 6),          # its own files: the device contexts, the runtime, devices, settings
    ("framework/core/tensor", 7),   # tensors in a device's context, enqueue, the tape
    ("framework/cpu", 8),       # the CPU backend
    ("framework/cuda", 8),      # the CUDA backend
    ("framework/registry", 9),  # the one place that names the concrete backends
    ("framework/dist", 9),      # the process group across ranks (MPI; NCCL bootstrapped over it)
    ("framework/ops", 10),      # the frontend ops
    ("framework/nn", 11),       # autograd's backward pass, layers, loss, optimizer
    ("models", 12),
    # train_mlp by stage (train/CMakeLists.txt): what is asked, the runs it
    # plans, what the models predict of them, running them, reporting them,
    # the studies that plan and report several; the driver on top.
    ("train/options", 13),
    ("train/async_demo", 14),   # a program of its own, on train_mlp's option parsing
    ("train/plan", 14),
    ("train/predict", 15),
    ("train/runs", 16),
    ("train/report", 17),
    ("train/studies", 18),
    ("train", 19),              # driver.cpp, train_mlp.cpp
    # The Python module (pybind11): a program on top of framework and models.
    # Beside train/, not on it: train/ is below it, and PROGRAMS keeps it
    # from including train/.
    ("python", 20),
]
# Programs: a folder here includes, besides the public headers (the umbrella
# among them), only the folders listed: what a program outside the tree sees
# of the library (its installed headers: the public ones and nn/'s) and the
# models. Not the engine behind the interface, not train/.
PROGRAMS = {
    "python": ("framework/nn", "models"),
}
PUBLIC = "framework"            # framework/*.h
UMBRELLA = "framework/asyncmlp.h"
SOURCES = (".h", ".cpp", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def folder_of(path):
    """The layer folder of a repository-relative path (the longest that
    holds it), or None."""
    best = None
    for folder, _ in LAYERS:
        if (path == folder or path.startswith(folder + "/")) and (best is None or len(folder) > len(best)):
            best = folder
    return best


def layer(folder):
    return dict(LAYERS)[folder]


def placed(path):
    """Whether the folder that holds `path` has its place: a LAYERS folder
    itself, or framework/ (the public headers)."""
    where = os.path.dirname(path)
    return where == PUBLIC or where in dict(LAYERS)


def is_public(path):
    return os.path.dirname(path) == PUBLIC and path.endswith(".h")


def resolve(root, src, inc):
    """The repository-relative path an include names: relative to the including
    file if that file exists, else relative to the root (the include path)."""
    beside = os.path.normpath(os.path.join(os.path.dirname(src), inc))
    if os.path.exists(os.path.join(root, beside)):
        return beside
    return os.path.normpath(inc)


def check_file(root, path):
    errors = []
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        lines = f.readlines()
    src_folder = folder_of(path)
    if not placed(path):
        errors.append(f"{path}: its folder {os.path.dirname(path)} has no place in the layers (LAYERS)")
    for n, line in enumerate(lines, 1):
        m = INCLUDE.match(line)
        if not m:
            continue
        target = resolve(root, path, m.group(1))
        where = f"{path}:{n}: includes {target}"
        if target == UMBRELLA and path.startswith("framework/"):
            errors.append(f"{where}: the umbrella header is for programs, not for the framework")
            continue
        if is_public(target):
            continue  # the interface: includable from anywhere
        dst_folder = folder_of(target)
        if is_public(path):
            if not (path == UMBRELLA and dst_folder == "framework/nn"):
                errors.append(f"{where}: a public header includes only public headers")
            continue
        if src_folder is None or dst_folder is None or dst_folder == src_folder:
            continue
        if src_folder in PROGRAMS:
            if dst_folder not in PROGRAMS[src_folder]:
                errors.append(f"{where}: {src_folder} includes only the public headers and "
                              + ", ".join(PROGRAMS[src_folder]) + " (what a program sees)")
            continue
        if layer(dst_folder) > layer(src_folder):
            errors.append(f"{where}: an upward include ({src_folder} is below {dst_folder})")
        elif layer(dst_folder) == layer(src_folder):
            errors.append(f"{where}: {src_folder} and {dst_folder} share a layer and include neither")
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="*", default=["framework", "train", "models", "python"])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = ap.parse_args()
    files = []
    for folder in args.folders:
        top = os.path.join(args.root, folder)
        if not os.path.isdir(top):
            print(f"check_layout: no folder {top}", file=sys.stderr)
            return 2
        for dirpath, _, names in os.walk(top):
            for name in sorted(names):
                if name.endswith(SOURCES):
                    files.append(os.path.relpath(os.path.join(dirpath, name), args.root))
    errors = []
    for path in sorted(files):
        errors += check_file(args.root, path)
    for e in errors:
        print(e)
    folders = " ".join(args.folders)
    if errors:
        print(f"layout: {len(errors)} error(s) in {len(files)} files under {folders}")
        return 1
    print(f"layout: {len(files)} files under {folders}: no upward include")
    return 0


if __name__ == "__main__":
    sys.exit(main())
