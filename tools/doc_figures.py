#!/usr/bin/python3
"""Every figure the pages quote, between markers, from the record of the run that gave it.

  doc_figures.py [--root DIR]            check every page (README.md, docs/*.md)
  doc_figures.py [--root DIR] --write    write each marked block's figures from its record
  doc_figures.py [--root DIR] --list     each block: page, name, kind, machine, command, figures

A page marks the text that quotes figures:

  <!-- figures NAME -->
  ... prose, tables, lists ...
  <!-- /figures -->

and docs/figures/PAGE.json (PAGE: the page's file name without .md) holds a
record per block, by NAME:

  {"NAME": {"kind": "machine", "machine": "...", "command": "...", "figures": ["1.16", "27,747", ...]}}

- kind "machine": the figures depend on the machine; the record names the
  machine and the command that measured them (both required). When a run
  gives new figures, they go into the record and --write puts them in the
  page.
- kind "deterministic": the figures follow from the shapes, not the machine
  (bytes per batch, a synchronized run's memory, op counts); the record names
  the command that gives them and the check that reruns it ("checked_by":
  a file of the repository, e.g. tools/check_doc_figures.py, which compares
  them with a fresh run of train_mlp).
- kind "generated": the block is written by a program from a file of figures
  (the record's "by", "from" and "checked_by": files of the repository); its
  figures are that file's, and its own test compares them, so the record
  lists none.

A block's figures are its numbers in the order they appear, as written
(digits with their separators and decimal point), leaving out inline code
(`--batches 100` is an argument, not a figure), fenced code, link targets,
HTML comments and numbers that are part of a word (H200, sm_90, TF32).

The check fails (one line each, exit 1) when a block's figures differ from
its record's (changing any digit of a quoted figure fails it), when a record
names no machine or command, when a block has no record or a record no
block, and when a page quotes a figure outside every block: a number with a
unit of time, memory, rate or ratio (ms, µs, MB, GiB, samples/s, 1.05×, 12%)
or a decimal number (1.7e-7, 0.98) in prose or a table, but for version
numbers (Linux 5.14, PyTorch 1.13).
"""
import argparse
import json
import os
import re
import sys

OPEN = re.compile(r"^<!-- figures ([\w.-]+) -->\s*$")
CLOSE = re.compile(r"^<!-- /figures -->\s*$")
NUMBER = re.compile(r"(?<![\w.§^/~-])-?\d+(?:,\d{3})*(?:\.\d+)?(?:e-?\d+)?(?!\.?\d)")
UNIT = re.compile(r"\s?(?:MB|GB|TB|GiB|MiB|KiB|kB|KB|B|ms|µs|us|ns|s|sec|min|seconds?|minutes?|hours?|%|"
                  r"samples/s|ops/s|GB/s|MB/s|[×x](?![\w]))(?![\w/])")
VERSION = re.compile(r"(?:Linux|PyTorch|CMake|Python|OpenMPI|MPI|CUDA|nvcc|cuBLAS|NumPy|pybind11|GoogleTest|"
                     r"OpenBLAS|Debian|clang|gcc|version|v|§|sm_|compute capability|capability|Open MPI|"
                     r"Toolkit|driver|kernels? before|kernel|PTX|C\+\+|ISA|Ubuntu|glibc)\s?$", re.I)
KINDS = ("machine", "deterministic", "generated")


def pages(root):
    out = ["README.md"]
    out += sorted(os.path.join("docs", n) for n in os.listdir(os.path.join(root, "docs")) if n.endswith(".md"))
    return out


def record_path(root, page):
    return os.path.join(root, "docs", "figures", os.path.splitext(os.path.basename(page))[0] + ".json")


def visible(line, in_fence):
    """The line without inline code, link targets and HTML comments, as spans of
    (start, end) that may hold figures; fenced code holds none."""
    if in_fence:
        return []
    hidden = []
    for pat in (r"`[^`]*`", r"\]\([^)]*\)", r"<!--.*?-->", r"https?://\S+"):
        hidden += [(m.start(), m.end()) for m in re.finditer(pat, line)]
    return hidden


def numbers(line, hidden):
    """The numbers of a line outside its hidden spans: (column, text)."""
    out = []
    for m in NUMBER.finditer(line):
        if any(a <= m.start() < b for a, b in hidden):
            continue
        out.append((m.start(), m.end(), m.group(0)))
    return out


def is_figure(line, start, end, text):
    """Whether a number outside every block is a figure: with a unit, or a decimal."""
    if VERSION.search(line[:start]):
        return False
    if UNIT.match(line, end):
        return True
    return "." in text or "e-" in text


def block_name(title):
    """A block's name from a heading's text: lower case, words joined by '-', at most 40 characters."""
    s = re.sub(r"[`'\"()*,:.?/=+&]", "", title.strip("# ").lower())
    return re.sub(r"[^a-z0-9]+", "-", s).strip("-")[:40]


def figures_of(page, text):
    """Each block's figures in a page's text, by name (the form of a record's "figures")."""
    return {name: [t for *_, t in figs] for name, (_, figs) in Page(page, text=text).blocks.items()}


class Page:
    """A page's blocks: name -> (first line, [(line number, start, end, text)...] of its figures)."""

    def __init__(self, page, root=None, text=None):
        self.page = page
        if text is None:
            with open(os.path.join(root, page), encoding="utf-8") as f:
                text = f.read()
        self.lines = text.split("\n")
        self.blocks, self.loose, self.errors = {}, [], []
        name, fence = None, False
        for n, line in enumerate(self.lines, 1):
            o, c = OPEN.match(line), CLOSE.match(line)
            if o:
                if name:
                    self.errors.append(f"{page}:{n}: block {o.group(1)} opens inside block {name}")
                name = o.group(1)
                if name in self.blocks:
                    self.errors.append(f"{page}:{n}: a second block named {name}")
                self.blocks[name] = (n, [])
                continue
            if c:
                if not name:
                    self.errors.append(f"{page}:{n}: <!-- /figures --> closes no block")
                name = None
                continue
            if line.lstrip().startswith("```"):
                fence = not fence
                continue
            found = numbers(line, visible(line, fence)) if not fence else []
            for start, end, text in found:
                if name:
                    self.blocks[name][1].append((n, start, end, text))
                elif is_figure(line, start, end, text):
                    self.loose.append((n, text, line.strip()))
        if name:
            self.errors.append(f"{page}: block {name} is not closed")


def load_records(root, page):
    path = record_path(root, page)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def check_page(root, page, p=None):
    """The page's errors; `p`: the page already read (a Page), else it is read here."""
    p = p or Page(page, root)
    errors = list(p.errors)
    records = load_records(root, page)
    rel = os.path.relpath(record_path(root, page), root)
    if records is None:
        records = {}
        if p.blocks:
            errors.append(f"{page}: marks blocks but {rel} does not exist")
    for n, text, line in p.loose:
        errors.append(f"{page}:{n}: the figure {text} is outside every <!-- figures --> block: {line[:100]}")
    for name, (first, figs) in p.blocks.items():
        r = records.get(name)
        where = f"{page}:{first}: block {name}"
        if r is None:
            errors.append(f"{where} has no record in {rel}")
            continue
        kind = r.get("kind", "machine")
        if kind not in KINDS:
            errors.append(f"{where}: kind {kind!r} is none of {', '.join(KINDS)}")
            continue
        if kind == "machine" and not (r.get("machine", "").strip() and r.get("command", "").strip()):
            errors.append(f"{where}: its record names no run (a machine and a command)")
        if kind == "deterministic" and not r.get("command", "").strip():
            errors.append(f"{where}: its record names no command")
        for key in {"deterministic": ["checked_by"], "generated": ["by", "from", "checked_by"]}.get(kind, []):
            for f in str(r.get(key, "")).split():
                if not os.path.exists(os.path.join(root, f)):
                    errors.append(f"{where}: its record's {key} {f!r} is not a file of the repository")
            if not str(r.get(key, "")).strip():
                errors.append(f"{where}: its record names no {key}")
        if kind == "generated":
            continue
        want = r.get("figures", [])
        have = [t for _, _, _, t in figs]
        for i, (got, exp) in enumerate(zip(have, want)):
            if got != exp:
                errors.append(f"{page}:{figs[i][0]}: block {name}'s figure {i + 1} is {got}; its record says {exp}")
                break
        else:
            if len(have) != len(want):
                errors.append(f"{where} quotes {len(have)} figures; its record holds {len(want)}")
    for name in records:
        if name not in p.blocks:
            errors.append(f"{rel}: the record {name} has no block in {page}")
    return errors


def write_page(root, page):
    """Each block's figures from its record, in order; the count must agree."""
    p = Page(page, root)
    records = load_records(root, page) or {}
    lines = list(p.lines)
    for name, (first, figs) in p.blocks.items():
        r = records.get(name)
        if r is None or r.get("kind") == "generated":
            continue
        want = r.get("figures", [])
        if len(want) != len(figs):
            raise SystemExit(f"doc_figures.py: {page}: block {name} quotes {len(figs)} figures, "
                             f"its record {len(want)}: write the block by hand first")
        for (n, start, end, _), new in reversed(list(zip(figs, want))):
            line = lines[n - 1]
            lines[n - 1] = line[:start] + new + line[end:]
    text = "\n".join(lines)
    with open(os.path.join(root, page), "w", encoding="utf-8") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--write", action="store_true", help="write each block's figures from its record")
    ap.add_argument("--list", action="store_true", help="list every block and its record")
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.root, "docs")):
        print(f"doc_figures.py: error: {args.root} has no docs/", file=sys.stderr)
        return 2
    if args.write:
        for page in pages(args.root):
            write_page(args.root, page)
    if args.list:
        for page in pages(args.root):
            records = load_records(args.root, page) or {}
            for name, (first, figs) in Page(page, args.root).blocks.items():
                r = records.get(name, {})
                print(f"{page}:{first}\t{name}\t{r.get('kind', 'machine')}\t{r.get('machine', '')}\t"
                      f"{r.get('command', r.get('by', ''))}\t{len(figs)} figures")
        return 0
    errors, blocks, figures = [], 0, 0
    for page in pages(args.root):
        p = Page(page, args.root)
        errors += check_page(args.root, page, p)
        blocks += len(p.blocks)
        figures += sum(len(f) for _, f in p.blocks.values())
    for e in errors:
        print(e)
    if errors:
        print(f"doc_figures: {len(errors)} error(s)")
        return 1
    print(f"doc_figures: {len(pages(args.root))} pages, {blocks} blocks, {figures} figures, each as its record has it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
