#!/usr/bin/python3
"""Checks that every design section the code cites exists in docs/design.md.

  check_design_refs.py [--root DIR] [--design FILE] FOLDER...
  check_design_refs.py --self-test

FOLDER: folders to scan, relative to the repository root. In every file under
them (sources, scripts, Markdown), a citation is any "§N": "docs/design.md
§N", with more sections after it on the same line ("§3, §6", "§1–§7"), or a
bare "§N" later in a file that cited the design once.
docs/design.md's sections are its headings "### §N Title". A citation of a
section that is not there is an error, as is a design document with no
sections. Prints one line per error and exits 1 if there was any, 0
otherwise; bad arguments exit 2.
"""
import argparse
import os
import re
import sys
import tempfile

HEADING = re.compile(r"^#{2,4}\s+§(\d+)\b")
SECTION = re.compile(r"§(\d+)")
RANGE = re.compile(r"§(\d+)\s*[–-]\s*§?(\d+)")
SKIP_DIRS = {".git", "__pycache__"}
TEXT = (".h", ".cpp", ".cu", ".cuh", ".py", ".sh", ".md", ".txt", ".cmake", ".ini")


def sections(design_path):
    with open(design_path, encoding="utf-8") as f:
        return {int(m.group(1)) for line in f for m in [HEADING.match(line)] if m}


def cited(line):
    """The section numbers a line cites, ranges expanded."""
    found = set()
    for m in RANGE.finditer(line):
        lo, hi = int(m.group(1)), int(m.group(2))
        found.update(range(min(lo, hi), max(lo, hi) + 1))
    found.update(int(n) for n in SECTION.findall(line))
    return found


def scan(root, folders, design_rel):
    design = os.path.join(root, design_rel)
    if not os.path.isfile(design):
        return [f"{design_rel}: not found"]
    have = sections(design)
    if not have:
        return [f"{design_rel}: no sections (headings '### §N Title')"]
    errors = []
    for folder in folders:
        top = os.path.join(root, folder)
        if not os.path.isdir(top):
            errors.append(f"{folder}: not a folder")
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            for name in sorted(filenames):
                if not name.endswith(TEXT):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                if rel == design_rel:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        for n in sorted(cited(line) - have):
                            errors.append(f"{rel}:{number}: cites §{n}, which {design_rel} does not have")
    return errors


def self_test():
    """The check fails on a missing section and passes on present ones."""
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        os.makedirs(os.path.join(root, "src"))
        with open(os.path.join(root, "docs", "design.md"), "w", encoding="utf-8") as f:
            f.write("# Design\n\n### §1 One\n\n### §2 Two\n")
        good = os.path.join(root, "src", "good.h")
        with open(good, "w", encoding="utf-8") as f:
            f.write("// queued (DESIGN §1); see also §2 and DESIGN §1–§2\n")
        if scan(root, ["src"], "docs/design.md"):
            return ["self-test: present sections were reported missing"]
        with open(os.path.join(root, "src", "bad.cpp"), "w", encoding="utf-8") as f:
            f.write("// blocks (DESIGN §1, §3)\n")
        errors = scan(root, ["src"], "docs/design.md")
        if len(errors) != 1 or "src/bad.cpp:1: cites §3" not in errors[0]:
            return [f"self-test: a missing §3 gave {errors!r}"]
    return []


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--design", default="docs/design.md")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("folders", nargs="*")
    args = ap.parse_args()
    if args.self_test:
        errors = self_test()
    elif not args.folders:
        ap.print_usage(sys.stderr)
        print("check_design_refs.py: error: name at least one folder", file=sys.stderr)
        return 2
    else:
        errors = scan(args.root, args.folders, args.design)
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
