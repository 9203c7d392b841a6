#!/usr/bin/python3
"""Checks that what the documentation points at is there: every relative
Markdown link in README.md and docs/*.md names a file of the repository
and, with a #fragment, one of that page's headings (as GitHub makes their
anchors); and every section a text file cites by title (configs,
sources, pages: a docs/ page's path, a comma, then the title's first words
in double quotes) starts a heading of that page.

  check_doc_links.py [--root DIR]

Prints one line per broken reference (FILE:LINE: what) and exits 1 if there
was any, 0 otherwise; bad arguments exit 2. tools/test_check_doc_links.py
runs it on the repository (a CTest test) and on pages made to fail.
"""
import argparse
import os
import re
import sys

LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
# A page's path, a comma, and the quoted start of a heading (a title may run
# on to the next line of a comment).
CITED = re.compile(r"(docs/[\w.-]+\.md),\s*\"([^\"]+?)(\"|$)")
# In a page: a link to a page, a comma, and the quoted start of its heading.
CITED_LINK = re.compile(r"\]\(([\w./-]+\.md)\),\s*\"([^\"]+?)(\"|$)")
SKIP_DIRS = {".git", "__pycache__", "build", "third_party"}
SKIP_FILES = {"check_doc_links.py", "test_check_doc_links.py"}  # they quote citations to test them
TEXT = (".h", ".cpp", ".cu", ".cuh", ".py", ".sh", ".md", ".txt", ".ini")


def slug(title):
    """GitHub's anchor for a heading: lower case, punctuation but - and _ dropped, spaces to -."""
    title = re.sub(r"[`*]", "", title).strip().lower()
    return re.sub(r"[^\w\- ]", "", title).replace(" ", "-")


def headings(path):
    """A page's headings (their text, comment words stripped of Markdown) and their anchors."""
    titles, anchors, seen = [], set(), {}
    in_code = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                in_code = not in_code
                continue
            m = None if in_code else HEADING.match(line)
            if not m:
                continue
            title = m.group(1)
            titles.append(re.sub(r"[`*]", "", title))
            s = slug(title)
            n = seen.get(s, 0)
            seen[s] = n + 1
            anchors.add(s if n == 0 else f"{s}-{n}")
    return titles, anchors


def markdown_pages(root):
    pages = [os.path.join(root, "README.md")]
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        pages += sorted(os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))
    return [p for p in pages if os.path.isfile(p)]


def text_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("build"))
        for name in sorted(filenames):
            if name.endswith(TEXT) and name not in SKIP_FILES:
                yield os.path.join(dirpath, name)


def check(root):
    errors = []
    cache = {}

    def page(path):
        if path not in cache:
            cache[path] = headings(path)
        return cache[path]

    for md in markdown_pages(root):
        rel_md = os.path.relpath(md, root)
        in_code = False
        with open(md, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.startswith("```"):
                    in_code = not in_code
                if in_code:
                    continue
                for target in LINK.findall(line):
                    if re.match(r"^[a-z]+:", target):  # https:, mailto:
                        continue
                    file_part, _, fragment = target.partition("#")
                    dest = os.path.normpath(os.path.join(os.path.dirname(md), file_part)) if file_part else md
                    if not os.path.exists(dest):
                        errors.append(f"{rel_md}:{n}: links to {file_part}, which is not in the repository")
                    elif fragment and dest.endswith(".md") and fragment not in page(dest)[1]:
                        errors.append(f"{rel_md}:{n}: links to {target}, but {os.path.relpath(dest, root)} "
                                      f"has no heading with that anchor")
    for path in text_files(root):
        rel = os.path.relpath(path, root)
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(lines, 1):
            cites = CITED.findall(line)
            if path.endswith(".md"):  # a linked page's path is the link's, from this page's folder
                cites += [(os.path.relpath(os.path.normpath(os.path.join(os.path.dirname(path), doc)), root), q, c)
                          for doc, q, c in CITED_LINK.findall(line)]
            for doc, quoted, closed in cites:
                if not closed and n < len(lines):  # the title runs on: its next line, comment marks dropped
                    quoted += " " + re.sub(r"^\s*(#|//|\*)?\s*", "", lines[n]).split('"')[0]
                quoted = re.sub(r"\s+", " ", quoted).rstrip(" .,;:")
                target = os.path.join(root, doc)
                if not os.path.isfile(target):
                    errors.append(f"{rel}:{n}: cites {doc}, which is not in the repository")
                elif not any(t.startswith(quoted) for t in page(target)[0]):
                    errors.append(f"{rel}:{n}: cites {doc}, \"{quoted}\", which starts none of its headings")
    return errors


def main():
    ap = argparse.ArgumentParser(description="Check the documentation's links and cited sections.")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = ap.parse_args()
    if not os.path.isfile(os.path.join(args.root, "README.md")):
        print(f"check_doc_links.py: error: {args.root} has no README.md", file=sys.stderr)
        return 2
    errors = check(args.root)
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
