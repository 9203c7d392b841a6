#!/usr/bin/python3
"""Type stubs for `import asyncmlp`, generated from the module itself:
python/asyncmlp/_asyncmlp.pyi, which editors and type checkers read (the
package is marked typed by python/asyncmlp/py.typed).

Every function, class, method, property and exception of the compiled module
gets its stub from what pybind11 says of it: the signature lines its
docstrings begin with (each overload's), then the docstring's text.

  PYTHONPATH=build/python /usr/bin/python3 tools/make_stubs.py          # rewrite the stub file
  PYTHONPATH=build/python /usr/bin/python3 tools/make_stubs.py --check  # exit 1 if it is not current

Exit status: 0; 1 when --check finds the file stale (one line); 2 for a bad
option (one line).
"""
import ast
import inspect
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STUB = os.path.join(ROOT, "python", "asyncmlp", "_asyncmlp.pyi")
PROG = "make_stubs.py"
MODULE = "asyncmlp._asyncmlp."


def split_doc(name, doc):
    """(signatures, text) of a pybind11 docstring: one signature line, or the
    numbered ones after "Overloaded function."; the text is the rest."""
    doc = doc or ""
    lines = doc.split("\n")
    if lines and lines[0].startswith(name + "(") and "Overloaded function." not in doc:
        return [lines[0]], "\n".join(lines[1:]).strip()
    sigs, text = [], []
    for line in lines:
        m = re.match(r"^\d+\. (" + re.escape(name) + r"\(.*)$", line)
        if m:
            sigs.append(m.group(1))
        elif line.strip() and line.strip() != f"{name}(*args, **kwargs)" and "Overloaded function." not in line:
            text.append(line)
    return sigs, "\n".join(text).strip()


def clean(sig):
    """A signature line as Python: the module's own prefix dropped, defaults as `...`,
    C++ types pybind11 could not name as Any."""
    sig = sig.replace(MODULE, "")
    # defaults: `: T = value` up to the next top-level comma or the closing paren
    out, depth, i = [], 0, 0
    while i < len(sig):
        c = sig[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if sig.startswith(" = ", i) and depth == 1:
            out.append(" = ...")
            j, d = i + 3, 0
            while j < len(sig) and not (d == 0 and sig[j] in ",)"):
                d += sig[j] in "([{"
                d -= sig[j] in ")]}"
                j += 1
            i = j
            continue
        out.append(c)
        i += 1
    sig = "".join(out)
    sig = re.sub(r"\b(?:amlp|std)::[\w:<>, ]+", "Any", sig)
    sig = sig.replace("numpy.ndarray[numpy.float32]", "numpy.ndarray")
    return sig


def docstring(text, indent):
    if not text:
        return []
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    body = "\n".join((indent + line) if line else "" for line in text.split("\n"))
    return [f'{indent}"""{text}"""' if "\n" not in text else f'{indent}"""\n{body}\n{indent}"""']


def function(name, obj, indent="", method=False):
    sigs, text = split_doc(name, obj.__doc__)
    if not sigs:
        sigs = [f"{name}(self, *args, **kwargs) -> Any" if method else f"{name}(*args, **kwargs) -> Any"]
    lines = []
    for sig in sigs:
        if len(sigs) > 1:
            lines.append(f"{indent}@overload")
        lines.append(f"{indent}def {clean(sig)}:")
        lines += docstring(text, indent + "    ") or [f"{indent}    ..."]
        if text:
            lines.append(f"{indent}    ...")
    return lines


def prop(name, p, indent):
    getter = p.fget
    sigs, text = split_doc("", (getter.__doc__ or "") if getter else "")
    m = re.search(r"->\s*(.+)$", (getter.__doc__ or "").split("\n")[0]) if getter else None
    kind = clean(m.group(1)).strip() if m else "Any"
    lines = [f"{indent}@property", f"{indent}def {name}(self) -> {kind}:"]
    text = "\n".join((p.__doc__ or "").split("\n")[1:]).strip() if p.__doc__ and p.__doc__.startswith("(") else (p.__doc__ or "").strip()
    return lines + (docstring(text, indent + "    ") + [f"{indent}    ..."] if text else [f"{indent}    ..."])


def klass(name, cls, module):
    # the module's own bases, and the built-in ones (an exception's ValueError, say);
    # not pybind11's hidden pybind11_object
    bases = [b.__name__ for b in cls.__bases__
             if b.__module__ == module.__name__ or (b.__module__ == "builtins" and b is not object)]
    lines = [f"class {name}({', '.join(bases)}):" if bases else f"class {name}:"]
    doc = (cls.__doc__ or "").strip()
    body = docstring(doc, "    ") if doc else []
    for attr, obj in sorted(vars(cls).items()):
        if attr.startswith("_") and attr not in ("__init__", "__enter__", "__exit__", "__call__", "__add__",
                                                 "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
                                                 "__matmul__", "__neg__", "__truediv__", "__rtruediv__",
                                                 "__len__", "__float__", "__array__", "__repr__", "__getitem__",
                                                 "__iter__", "__bool__", "__int__"):
            continue
        if isinstance(obj, property):
            body += prop(attr, obj, "    ")
        elif isinstance(obj, staticmethod):
            body += ["    @staticmethod"] + function(attr, obj.__func__, "    ")
        elif callable(obj) and type(obj).__name__ in ("instancemethod", "builtin_function_or_method", "function"):
            body += function(attr, obj, "    ", method=True)
        elif not callable(obj) and not attr.startswith("_"):
            body.append(f"    {attr}: {type(obj).__name__}")
    return lines + (body or ["    ..."])


def stubs(module):
    out = [f'"""Type stubs of {module.__name__}: generated by tools/make_stubs.py from the module; not by hand."""',
           "from typing import Any, Callable, Dict, List, Optional, Tuple, overload", "", "import numpy", ""]
    names = sorted(n for n in dir(module) if not n.startswith("_"))
    classes = [n for n in names if inspect.isclass(getattr(module, n))]
    # base classes first (the exceptions' Error), then by name
    classes.sort(key=lambda n: (len(getattr(module, n).__mro__), n))
    for n in classes:
        out += klass(n, getattr(module, n), module) + [""]
    for n in names:
        obj = getattr(module, n)
        if n in classes:
            continue
        if callable(obj):
            out += function(n, obj) + [""]
        else:
            out += [f"{n}: {type(obj).__name__}", ""]
    out.append("__version__: str")
    text = "\n".join(out).rstrip("\n") + "\n"
    ast.parse(text)  # valid Python, or this fails here
    return text


def main(argv):
    if argv not in ([], ["--check"]):
        sys.stderr.write(f"{PROG}: usage: {PROG} [--check]\n")
        return 2
    import asyncmlp._asyncmlp as module
    text = stubs(module)
    if argv == ["--check"]:
        try:
            with open(STUB, encoding="utf-8") as f:
                current = f.read()
        except OSError as e:
            current = None
            sys.stderr.write(f"{PROG}: {STUB}: {e.strerror}\n")
            return 1
        if current != text:
            sys.stderr.write(f"{PROG}: {os.path.relpath(STUB, ROOT)} is not the module's stubs: run tools/make_stubs.py\n")
            return 1
        return 0
    with open(STUB, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
