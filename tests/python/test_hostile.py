"""The hostile matrix of import asyncmlp: one table (TABLE) of every public
binding and its arguments, each argument of a kind (KINDS); the test calls
every binding with every hostile form of each argument in turn (the other
arguments good), then waits for what it queued. Each call must return or
raise a Python exception of a built-in class (never pybind11's bare "Unable
to cast"); a segfault, abort or hang fails the group it happened in, named by
its last case, since each group runs in a child interpreter (this file run as
a script) under a watchdog. A public binding without a row, or a row
without a binding, fails test_every_binding_has_a_row.

    python3 tests/python/test_hostile.py [GROUP]   # the cases' outcomes, one JSON line each
"""
import ast
import faulthandler
import json
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import asyncmlp as am
import asyncmlp._asyncmlp as module

# --- the hostile forms of each kind of argument ---------------------------------
# Each form a (label, factory); factories run in the child, one case at a time.

HUGE = [("2**31", lambda: 2**31), ("2**40", lambda: 2**40), ("2**63", lambda: 2**63)]
NOT_A_VALUE = [("None", lambda: None), ("object()", lambda: object())]


def tensor(shape=(2, 2), dev=0):
    return am.ones(shape, device=am.cpu(dev))


def emptied_tensor():
    t = tensor()
    dropped = am.ones((64, 64))
    del dropped
    am.empty_cache(am.cpu())  # the pool's cached blocks handed back while t lives
    return t


def view_of_a_dropped_tensor():
    return am.ones(4).reshape(2, 2)  # the base's only handle is gone


def trained_sgd():
    net = am.Dense(2, in_units=2)
    am.L2Loss()(net(tensor()), am.zeros((2, 2))).backward()
    return am.SGD(net, lr=0.1)


def strided(shape, strides, dtype=np.float32):
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype), shape=shape, strides=strides)


TENSORS = [
    ("str", lambda: "ab"), ("float 1.5", lambda: 1.5), ("int 2", lambda: 2), ("nan", lambda: math.nan),
    ("ndarray", lambda: np.ones((2, 2), np.float32)), ("list", lambda: [[1.0, 1.0], [1.0, 1.0]]),
    ("a Device", lambda: am.cpu()), ("a tensor of another device", lambda: tensor(dev=1)),
    ("an emptied tensor", emptied_tensor), ("a view of a dropped tensor", view_of_a_dropped_tensor),
    ("a zero-size tensor", lambda: am.zeros((0, 2))), ("a 0-d tensor", lambda: am.ones(())),
    ("a tensor of another shape", lambda: am.ones((3, 5))), ("a NaN tensor", lambda: tensor() * math.nan),
]
KINDS = {
    "tensor": NOT_A_VALUE + TENSORS,
    "self:Tensor": NOT_A_VALUE + [f for f in TENSORS if f[0] in (
        "a Device", "a tensor of another device", "an emptied tensor", "a view of a dropped tensor",
        "a zero-size tensor", "a 0-d tensor", "a NaN tensor", "ndarray")],
    "shape": NOT_A_VALUE + [
        ("str", lambda: "ab"), ("bytes", lambda: b"ab"), ("float", lambda: 2.5), ("(2.5, 2)", lambda: (2.5, 2)),
        ("bool", lambda: True), ("nan", lambda: math.nan), ("-1", lambda: -1), ("(-3, 2)", lambda: (-3, 2)),
        ("0", lambda: 0), ("(0,)", lambda: (0,)), ("(2**63,)", lambda: (2**63,)), ("2**64", lambda: 2**64),
        ("(2**31, 2**31)", lambda: (2**31, 2**31)), ("(2**40, 2**40)", lambda: (2**40, 2**40)),
        ("float ndarray", lambda: np.zeros(2)), ("int ndarray", lambda: np.array([2, 2])),
        ("[2, None]", lambda: [2, None]), ("dict", lambda: {2: 3})] + HUGE,
    "int": NOT_A_VALUE + [
        ("str", lambda: "3"), ("float", lambda: 2.5), ("nan", lambda: math.nan), ("inf", lambda: math.inf),
        ("bool", lambda: True), ("-1", lambda: -1), ("0", lambda: 0), ("2**64", lambda: 2**64),
        ("-2**63-1", lambda: -2**63 - 1), ("numpy int", lambda: np.int64(3))] + HUGE,
    "float": NOT_A_VALUE + [
        ("str", lambda: "x"), ("nan", lambda: math.nan), ("inf", lambda: math.inf), ("-inf", lambda: -math.inf),
        ("1e300", lambda: 1e300), ("-1.0", lambda: -1.0), ("0.0", lambda: 0.0), ("2**64", lambda: 2**64),
        ("complex", lambda: 1 + 1j), ("numpy nan", lambda: np.float64("nan")), ("ndarray", lambda: np.ones(2))],
    "device": NOT_A_VALUE + [
        ("int", lambda: 5), ("float", lambda: 2.5), ("'tpu'", lambda: "tpu"), ("'cpu:99'", lambda: "cpu:99"),
        ("''", lambda: ""), ("'cuda:0'", lambda: "cuda:0"), ("cpu(-1)", lambda: am.cpu(-1)),
        ("cpu(2**31-1)", lambda: am.cpu(2**31 - 1)), ("gpu(0)", lambda: am.gpu(0)),
        ("another device", lambda: am.cpu(1)), ("a tensor", tensor)],
    "str": NOT_A_VALUE + [
        ("int", lambda: 5), ("float", lambda: 2.5), ("''", lambda: ""), ("'bogus'", lambda: "bogus"),
        ("NUL", lambda: "\0"), ("100k chars", lambda: "x" * 100000), ("bytes", lambda: b"relu")],
    "bool": NOT_A_VALUE + [
        ("str", lambda: "x"), ("int 2", lambda: 2), ("float", lambda: 2.5), ("nan", lambda: math.nan),
        ("numpy bool", lambda: np.bool_(True))],
    "array": NOT_A_VALUE + [
        ("str", lambda: "ab"), ("float", lambda: 5.0), ("nan", lambda: math.nan), ("list", lambda: [1, 2]),
        ("ragged list", lambda: [[1], [1, 2]]), ("0-d", lambda: np.array(2.5, np.float32)),
        ("non-contiguous", lambda: np.arange(12.0).reshape(3, 4)[:, ::2]), ("float64", lambda: np.ones(3)),
        ("int64", lambda: np.arange(3)), ("bool", lambda: np.ones(3, bool)), ("float16", lambda: np.ones(3, np.float16)),
        ("big-endian", lambda: np.ones(3, ">f4")), ("Fortran order", lambda: np.asfortranarray(np.ones((3, 2)))),
        ("read-only", lambda: np.ones(3, np.float32).view().setflags(write=False) or np.ones(3, np.float32)),
        ("object", lambda: np.array([1, None], dtype=object)), ("structured", lambda: np.zeros(2, "f4,i4")),
        ("string", lambda: np.array(["a", "b"])), ("complex", lambda: np.ones(2, np.complex64)),
        ("datetime", lambda: np.zeros(2, "datetime64[s]")), ("empty (0, 3)", lambda: np.zeros((0, 3))),
        ("4 EiB zero-stride view", lambda: strided((2**60,), (0,))),
        ("2**31 zero-stride view", lambda: strided((2**31,), (0,))),
        ("2**30 x 2**30 zero-stride view", lambda: strided((2**30, 2**30), (0, 0)))],
    "block": NOT_A_VALUE + [
        ("str", lambda: "relu"), ("a tensor", tensor), ("the Dense class", lambda: am.Dense),
        ("an L2Loss", lambda: am.L2Loss()), ("a Device", lambda: am.cpu()), ("a deferred Dense", lambda: am.Dense(2))],
    "timer": NOT_A_VALUE + [
        ("a tensor", tensor), ("a timer of another device", lambda: am.DeviceTimer.mark(am.cpu(1)))],
    "any": NOT_A_VALUE + [("str", lambda: "x"), ("2**63", lambda: 2**63)],
    "dtype": NOT_A_VALUE + [("str", lambda: "x"), ("int", lambda: 5), ("int32", lambda: np.int32),
                            ("'f8'", lambda: "f8"), ("object dtype", lambda: np.dtype("O")),
                            ("structured dtype", lambda: np.dtype("f4,i4"))],
    "self:Block": NOT_A_VALUE + [("a tensor", tensor), ("an L2Loss", lambda: am.L2Loss()),
                                 ("a deferred Dense", lambda: am.Dense(2))],
    "self:Sequential": NOT_A_VALUE + [("a Dense", lambda: am.Dense(2, in_units=2)), ("a tensor", tensor)],
    "self:SGD": NOT_A_VALUE + [("a tensor", tensor), ("SGD over a deferred Dense", lambda: am.SGD(am.Dense(2), 0.1)),
                               ("SGD before any backward", lambda: am.SGD(am.Dense(2, in_units=2), 0.1))],
    "self:L2Loss": NOT_A_VALUE + [("a Dense", lambda: am.Dense(2, in_units=2)), ("a tensor", tensor)],
    "self:Device": NOT_A_VALUE + [("a tensor", tensor), ("cpu(-1)", lambda: am.cpu(-1)),
                                  ("cpu(2**31-1)", lambda: am.cpu(2**31 - 1)), ("gpu(0)", lambda: am.gpu(0))],
    "self:DeviceTimer": NOT_A_VALUE + [("a tensor", tensor), ("a Device", lambda: am.cpu())],
    "self:scope": NOT_A_VALUE + [
        ("a tensor", tensor), ("paused(gpu(0))", lambda: am.paused(am.gpu(0))),
        ("paused(cpu(-1))", lambda: am.paused(am.cpu(-1))), ("data_queue(gpu(0))", lambda: am.data_queue(am.gpu(0))),
        ("data_queue(cpu(2**31-1))", lambda: am.data_queue(am.cpu(2**31 - 1)))],
}


def enter_exit(cls_name):
    cls = getattr(am, cls_name)
    return lambda scope: (cls.__enter__(scope), cls.__exit__(scope, None, None, None))


def prop(cls, name):
    return lambda self: getattr(cls, name).fget(self)


# --- the table: every public binding, its call and its arguments (name, kind, good value) ------

T = ("self", "self:Tensor", tensor)
A, B = ("a", "tensor", tensor), ("b", "tensor", tensor)
DEV = ("device", "device", lambda: None)
DEVICE = ("device", "device", lambda: am.cpu(5))
SHAPE = ("shape", "shape", lambda: (2, 3))
NO_ARGS = []


def exception_row(cls_name):
    return (lambda message: getattr(am, cls_name)(message), [("message", "any", lambda: "a line")])


def method(cls_name, name, self_arg, *args):
    return (lambda self, *a: getattr(getattr(am, cls_name), name)(self, *a), [self_arg, *args])


TABLE = {
    # devices
    "cpu": (am.cpu, [("i", "int", lambda: 1)]),
    "gpu": (am.gpu, [("i", "int", lambda: 0)]),
    "cuda": (am.cuda, [("i", "int", lambda: 0)]),
    "num_gpus": (am.num_gpus, NO_ARGS),
    "device": (am.device, [("s", "str", lambda: "cpu:1")]),
    "Device.__init__": (lambda: am.Device(), NO_ARGS),
    "Device.is_cuda": (prop(am.Device, "is_cuda"), [("self", "self:Device", am.cpu)]),
    "Device.index": (prop(am.Device, "index"), [("self", "self:Device", am.cpu)]),
    "Device.__str__": method("Device", "__str__", ("self", "self:Device", am.cpu)),
    "Device.__repr__": method("Device", "__repr__", ("self", "self:Device", am.cpu)),
    "Device.__eq__": method("Device", "__eq__", ("self", "self:Device", am.cpu), ("other", "device", am.cpu)),
    "Device.__hash__": method("Device", "__hash__", ("self", "self:Device", am.cpu)),
    # creation
    "array": (am.array, [("values", "array", lambda: np.ones((2, 2), np.float32)), DEV]),
    "ones": (am.ones, [SHAPE, DEV]),
    "zeros": (am.zeros, [SHAPE, DEV]),
    "full": (am.full, [SHAPE, ("value", "float", lambda: 2.5), DEV]),
    "normal": (am.normal, [("loc", "float", lambda: 0.0), ("scale", "float", lambda: 1.0), SHAPE, DEV]),
    "uniform": (am.uniform, [("low", "float", lambda: 0.0), ("high", "float", lambda: 1.0), SHAPE, DEV]),
    "randn": (am.randn, [SHAPE, DEV]),
    "manual_seed": (am.manual_seed, [("seed", "int", lambda: 7)]),
    # math
    "reshape": (am.reshape, [A, ("shape", "shape", lambda: (4,))]),
    "dot": (am.dot, [A, B]),
    "matmul": (am.matmul, [A, B]),
    "multiply": (am.multiply, [A, B]),
    "relu": (am.relu, [A]),
    "sum": (am.sum, [A]),
    "mean": (am.mean, [A]),
    "check_finite": (am.check_finite, [A, ("what", "str", lambda: "x")]),
    "waitall": (am.waitall, NO_ARGS),
    # the tensor
    "Tensor.__init__": (lambda: am.Tensor(), NO_ARGS),
    "Tensor.shape": (prop(am.Tensor, "shape"), [T]),
    "Tensor.ndim": (prop(am.Tensor, "ndim"), [T]),
    "Tensor.size": (prop(am.Tensor, "size"), [T]),
    "Tensor.device": (prop(am.Tensor, "device"), [T]),
    "Tensor.dtype": (prop(am.Tensor, "dtype"), [T]),
    "Tensor.__array__": method("Tensor", "__array__", T, ("dtype", "dtype", lambda: None)),
    "Tensor.grad": (prop(am.Tensor, "grad"), [T]),
    "Tensor.requires_grad": (lambda self, on: (am.Tensor.requires_grad.fget(self),
                                               am.Tensor.requires_grad.fset(self, on)),
                             [T, ("on", "bool", lambda: True)]),
    "Tensor.requires_grad_": method("Tensor", "requires_grad_", T, ("on", "bool", lambda: True)),
    "Tensor.wait_to_read": method("Tensor", "wait_to_read", T),
    "Tensor.asnumpy": method("Tensor", "asnumpy", T),
    "Tensor.numpy": method("Tensor", "numpy", T),
    "Tensor.item": method("Tensor", "item", T),
    "Tensor.__float__": method("Tensor", "__float__", T),
    "Tensor.__repr__": method("Tensor", "__repr__", T),
    "Tensor.backward": method("Tensor", "backward", T),
    "Tensor.__add__": method("Tensor", "__add__", T, B),
    "Tensor.__radd__": method("Tensor", "__radd__", T, ("s", "float", lambda: 1.0)),
    "Tensor.__sub__": method("Tensor", "__sub__", T, B),
    "Tensor.__rsub__": method("Tensor", "__rsub__", T, ("s", "float", lambda: 1.0)),
    "Tensor.__mul__": method("Tensor", "__mul__", T, B),
    "Tensor.__rmul__": method("Tensor", "__rmul__", T, ("s", "float", lambda: 2.0)),
    "Tensor.__truediv__": method("Tensor", "__truediv__", T, ("s", "float", lambda: 2.0)),
    "Tensor.__neg__": method("Tensor", "__neg__", T),
    "Tensor.__matmul__": method("Tensor", "__matmul__", T, B),
    "Tensor.sum": method("Tensor", "sum", T),
    "Tensor.mean": method("Tensor", "mean", T),
    "Tensor.copyto": method("Tensor", "copyto", T, ("device", "device", lambda: am.cpu(1))),
    "Tensor.reshape": method("Tensor", "reshape", T, ("shape", "shape", lambda: (4,))),
    # settings and statistics
    "set_blocking": (am.set_blocking, [("on", "bool", lambda: False)]),
    "blocking": (am.blocking, NO_ARGS),
    "set_alloc": (am.set_alloc, [("policy", "str", lambda: "stream")]),
    "alloc": (am.alloc, NO_ARGS),
    "set_grad_enabled": (am.set_grad_enabled, [("on", "bool", lambda: True)]),
    "grad_enabled": (am.grad_enabled, NO_ARGS),
    "set_max_pending": (am.set_max_pending, [("ops", "int", lambda: 0), ("bytes", "int", lambda: 0)]),
    "set_memory_limit": (am.set_memory_limit, [DEVICE, ("bytes", "int", lambda: 1 << 28)]),
    "memory_stats": (am.memory_stats, [DEVICE]),
    "queue_stats": (am.queue_stats, [DEVICE]),
    "reset_peaks": (am.reset_peaks, [DEVICE]),
    "empty_cache": (am.empty_cache, [DEVICE]),
    "process_rss_bytes": (am.process_rss_bytes, NO_ARGS),
    "DeviceTimer.__init__": (lambda: am.DeviceTimer(), NO_ARGS),
    "DeviceTimer.mark": (am.DeviceTimer.mark, [DEVICE]),
    "DeviceTimer.reached": method("DeviceTimer", "reached",
                                  ("self", "self:DeviceTimer", lambda: am.DeviceTimer.mark(am.cpu()))),
    "DeviceTimer.seconds_since": method("DeviceTimer", "seconds_since",
                                        ("self", "self:DeviceTimer", lambda: am.DeviceTimer.mark(am.cpu())),
                                        ("earlier", "timer", lambda: am.DeviceTimer.mark(am.cpu()))),
    # scopes (entered and left at once: nothing here waits while a worker is held)
    "paused.__init__": (am.paused, [DEVICE]),
    "paused.__enter__": (enter_exit("paused"), [("self", "self:scope", lambda: am.paused(am.cpu(5)))]),
    "paused.__exit__": method("paused", "__exit__", ("self", "self:scope", lambda: am.paused(am.cpu(5))),
                              ("exc", "any", lambda: None)),
    "data_queue.__init__": (am.data_queue, [DEVICE]),
    "data_queue.__enter__": (enter_exit("data_queue"), [("self", "self:scope", lambda: am.data_queue(am.cpu(5)))]),
    "data_queue.__exit__": method("data_queue", "__exit__", ("self", "self:scope", lambda: am.data_queue(am.cpu(5))),
                                  ("exc", "any", lambda: None)),
    "no_grad.__init__": (am.no_grad, NO_ARGS),
    "no_grad.__enter__": (enter_exit("no_grad"), [("self", "self:scope", am.no_grad)]),
    "no_grad.__exit__": method("no_grad", "__exit__", ("self", "self:scope", am.no_grad), ("exc", "any", lambda: None)),
    # layers (a Dense called once, so its deferred weights are drawn)
    "Block.__init__": (lambda: am.Block(), NO_ARGS),
    "Block.__call__": method("Block", "__call__", ("self", "self:Block", lambda: am.Dense(2, in_units=2)), A),
    "Block.describe": method("Block", "describe", ("self", "self:Block", am.ReLU)),
    "Block.parameters": method("Block", "parameters", ("self", "self:Block", lambda: am.Dense(2, in_units=2))),
    "Dense.__init__": (lambda units, activation, in_units: am.Dense(units, activation, in_units)(tensor()),
                       [("units", "int", lambda: 3), ("activation", "str", lambda: "relu"),
                        ("in_units", "int", lambda: 2)]),
    "ReLU.__init__": (am.ReLU, NO_ARGS),
    "Sequential.__init__": (am.Sequential, NO_ARGS),
    "Sequential.add": (lambda self, block: (self.add(block), self(tensor())) if isinstance(self, am.Sequential)
                       else am.Sequential.add(self, block),
                       [("self", "self:Sequential", am.Sequential), ("block", "block", am.ReLU)]),
    "Sequential.__len__": method("Sequential", "__len__", ("self", "self:Sequential", am.Sequential)),
    "L2Loss.__init__": (am.L2Loss, NO_ARGS),
    "L2Loss.__call__": method("L2Loss", "__call__", ("self", "self:L2Loss", am.L2Loss), ("pred", "tensor", tensor),
                              ("label", "tensor", tensor)),
    "SGD.__init__": (am.SGD, [("net", "block", lambda: am.Dense(2, in_units=2)), ("lr", "float", lambda: 0.1),
                              ("momentum", "float", lambda: 0.9), ("wd", "float", lambda: 0.0)]),
    "SGD.step": method("SGD", "step", ("self", "self:SGD", trained_sgd), ("batch_size", "int", lambda: 2)),
    "SGD.zero_grad": method("SGD", "zero_grad", ("self", "self:SGD", trained_sgd)),
}
for _name in ("Error", "ShapeError", "DeviceError", "EnvError", "OutOfMemory", "Dropped", "DeviceFault", "KernelError"):
    TABLE[_name] = exception_row(_name)

GROUPS = {
    "tensor": lambda row: row.startswith("Tensor."),
    "layers": lambda row: row.split(".")[0] in ("Block", "Dense", "ReLU", "Sequential", "L2Loss", "SGD"),
    "creation": lambda row: row in ("array", "ones", "zeros", "full", "normal", "uniform", "randn", "manual_seed"),
}


def group_of(row):
    return next((g for g, member in GROUPS.items() if member(row)), "the rest")


# --- the bindings of the module --------------------------------------------------

INFRASTRUCTURE = {"__module__", "__doc__", "__dict__", "__weakref__", "__new__"}


def bindings_of(mod):
    """Every public name of the module: its functions, its classes' own members
    ("Class.member", __init__ included), its exception classes."""
    names = set()
    for name in dir(mod):
        if name.startswith("_"):
            continue
        obj = getattr(mod, name)
        if isinstance(obj, type) and not issubclass(obj, BaseException):
            names |= {f"{name}.{m}" for m in vars(obj) if m not in INFRASTRUCTURE}
        else:
            names.add(name)
    return names


def rows_missing(mod, table):
    """(bindings without a row, rows without a binding)."""
    bound = bindings_of(mod)
    return sorted(bound - set(table)), sorted(set(table) - bound)


# --- a case: one call, then a wait for what it queued ------------------------------

BUILTIN = (TypeError, ValueError, OverflowError, MemoryError, RuntimeError, IndexError, KeyError, AttributeError,
           ZeroDivisionError, NotImplementedError)
LIMIT = 1 << 28  # each device's memory limit in the child: a huge size is refused, whatever the machine


def settle():
    """The child's settings back to where each case starts (a case may change them)."""
    try:
        am.waitall()
    except BaseException:
        pass
    am.set_blocking(False)
    am.set_max_pending(0, 0)
    am.set_alloc("stream")
    am.set_grad_enabled(True)
    for i in range(8):
        try:
            am.set_memory_limit(am.cpu(i), LIMIT)
        except am.DeviceError:
            break


def cases(rows):
    """(row, argument, form label, thunk) for every hostile form of every argument of each row;
    a row without arguments is one case."""
    for row in rows:
        call, args = TABLE[row]
        if not args:
            yield row, "-", "no arguments", (lambda call=call: call())
        for i, (arg, kind, _) in enumerate(args):
            for label, make in KINDS[kind]:
                def thunk(call=call, args=args, i=i, make=make):
                    values = [make() if j == i else good() for j, (_, _, good) in enumerate(args)]
                    return call(*values)
                yield row, arg, label, thunk


def run_case(thunk):
    try:
        thunk()
        am.waitall()  # an error a kernel met comes back here
        return "ok", ""
    except BUILTIN as e:
        return type(e).__name__, str(e)
    except BaseException as e:  # noqa: B036 (the point: anything else is a failure)
        return f"NOT BUILT-IN: {type(e).__name__}", str(e)


def child(group):
    faulthandler.enable()
    rows = [r for r in TABLE if group in (None, group_of(r))]
    settle()
    for row, arg, label, thunk in cases(rows):
        print(f"START {row} {arg}={label}", file=sys.stderr, flush=True)
        faulthandler.dump_traceback_later(60, exit=True)  # a hang ends the child, naming its case
        outcome, msg = run_case(thunk)
        faulthandler.cancel_dump_traceback_later()
        settle()
        print(json.dumps({"row": row, "arg": arg, "form": label, "outcome": outcome, "message": msg[:300]}),
              flush=True)


# --- the tests ---------------------------------------------------------------------

def test_every_binding_has_a_row():
    unlisted, stale = rows_missing(module, TABLE)
    assert not unlisted, f"public bindings without a row in TABLE: {unlisted}"
    assert not stale, f"rows of TABLE without a binding: {stale}"


def test_a_binding_without_a_row_is_found():
    class Grown:  # the module with one binding more, and one of its classes with one method more
        pass

    for name in dir(module):
        setattr(Grown, name, getattr(module, name))
    Grown.new_function = staticmethod(len)
    Grown.Tensor = type("Tensor", (), {"new_method": lambda self: None, "shape": None})
    unlisted, stale = rows_missing(Grown, TABLE)
    assert "new_function" in unlisted and "Tensor.new_method" in unlisted
    assert "Tensor.asnumpy" in stale  # the stand-in Tensor has no asnumpy


def doc_text(name):
    """A binding's docstring less pybind11's signature lines (which every binding has)."""
    obj = module
    for part in name.split("."):
        obj = vars(obj)[part] if isinstance(obj, type) and part in vars(obj) else getattr(obj, part)
    short = name.split(".")[-1]
    return [line for line in (obj.__doc__ or "").splitlines()
            if line.strip() and line.strip() != "Overloaded function."
            and not line.strip().lstrip("0123456789. ").startswith(short + "(")]


CONSTRUCTORLESS = {"Tensor.__init__", "Block.__init__", "Device.__init__", "DeviceTimer.__init__"}


def test_every_binding_and_class_has_a_docstring():
    empty = [n for n in sorted(bindings_of(module) - CONSTRUCTORLESS) if not doc_text(n)]
    assert not empty, f"bindings without a docstring: {empty}"
    classes = [n for n in dir(module) if isinstance(getattr(module, n), type) and not n.startswith("_")]
    assert not [n for n in classes if not (getattr(module, n).__doc__ or "").strip()]


def test_the_docstrings_of_the_ops_give_shapes():
    for name in ("dot", "matmul", "Tensor.__matmul__", "ones", "sum", "L2Loss.__call__", "Block.__call__", "Dense"):
        text = " ".join(doc_text(name)) if name != "Dense" else module.Dense.__doc__
        assert "(" in text and ("shape" in text or "->" in text), (name, text)


def test_the_type_stubs_are_the_modules():
    root = pathlib.Path(__file__).resolve().parents[2]
    pyi = root / "python" / "asyncmlp" / "_asyncmlp.pyi"
    r = subprocess.run([sys.executable, str(root / "tools" / "python_stubs.py"), "--check", str(pyi)],
                       capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    tree = ast.parse(pyi.read_text())
    named = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            named.add(node.name)
        elif isinstance(node, ast.ClassDef):
            named.add(node.name)
            named |= {f"{node.name}.{d.name}" for d in node.body if isinstance(d, ast.FunctionDef)}
    exceptions = {n for n in dir(module) if isinstance(getattr(module, n), type)
                  and issubclass(getattr(module, n), BaseException)}
    missing = sorted(bindings_of(module) - CONSTRUCTORLESS - named - exceptions)
    assert not missing, f"bindings the stubs do not name: {missing}"
    assert exceptions <= named


def test_every_kind_has_forms():
    kinds = {kind for _, args in TABLE.values() for _, kind, _ in args}
    assert kinds <= set(KINDS), kinds - set(KINDS)


@pytest.mark.parametrize("group", ["tensor", "layers", "creation", "the rest"])
def test_every_binding_against_every_hostile_form(group):
    r = subprocess.run([sys.executable, __file__, group], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ))
    results = [json.loads(line) for line in r.stdout.splitlines()]
    started = [line for line in r.stderr.splitlines() if line.startswith("START ")]
    said = "\n".join(line for line in r.stderr.splitlines() if not line.startswith("START "))
    assert r.returncode == 0 and len(results) == len(started), (
        f"the child ended with {r.returncode} in case {started[-1] if started else '?'}:\n{said[-3000:]}")
    expected = sum(max(1, sum(len(KINDS[k]) for _, k, _ in TABLE[row][1]))
                   for row in TABLE if group_of(row) == group)
    assert len(results) == expected
    bad = [c for c in results if c["outcome"].startswith("NOT BUILT-IN") or "Unable to cast" in c["message"]]
    assert not bad, "\n".join(json.dumps(c) for c in bad)
    # A library error keeps to its one line.
    multi = [c for c in results if c["outcome"] not in ("ok", "TypeError") and "\n" in c["message"]]
    assert not multi, "\n".join(json.dumps(c) for c in multi)
    rows = {c["row"] for c in results}
    print(f"{group}: {len(rows)} bindings, {len(results)} cases, "
          f"{sum(c['outcome'] == 'ok' for c in results)} returned, the rest raised")


if __name__ == "__main__":
    child(sys.argv[1] if len(sys.argv) > 1 else None)
