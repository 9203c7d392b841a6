"""MXNet's arrays over asyncmlp tensors: `NDArray` (the first edition's
`mxnet.nd`) and `ndarray` (the current edition's `mxnet.np`). Each wraps one
asyncmlp.Tensor; every op is one call into asyncmlp, queued, returning at
once; the blockers are MXNet's: wait_to_read(), asnumpy(), asscalar(), item()
and printing. The wrapper exists for MXNet's names and MXNet's printing.

Data made from nothing (random draws, ones, zeros, full, array) is queued on
the device's data queue (asyncmlp.data_queue), which runs beside the main
queue, as MXNet's engine runs independent ops ahead of a busy worker.
"""
import math

import numpy as _numpy

import asyncmlp as _am

from .._wrapped import Wrapped


def _device(ctx):
    """An MXNet context (None: cpu(0), a Device, or 'cpu'/'gpu:1'-style text) as an asyncmlp Device."""
    if ctx is None:
        return _am.cpu()
    if isinstance(ctx, _am.Device):
        return ctx
    if isinstance(ctx, str):
        return _am.device(ctx.replace("gpu", "cuda"))
    raise TypeError(f"ctx must be mx.cpu(i) or mx.gpu(i) (got {type(ctx).__name__})")


def _context_name(dev):
    """MXNet's name of a device: cpu(0), gpu(1)."""
    return f"{'gpu' if dev.is_cuda else 'cpu'}({dev.index})"


def _check_dtype(dtype):
    if dtype is not None and _numpy.dtype(dtype) != _numpy.float32:
        raise TypeError(f"asyncmlp holds float32 values only (got dtype={dtype!r})")


def _shape(shape):
    if shape is None:
        raise TypeError("a shape is required (asyncmlp makes no scalar draws)")
    return (shape,) if isinstance(shape, int) else tuple(shape)


def _make(cls, fn, ctx, dtype, *args, **kwargs):
    """cls(fn(*args, device=..)) queued on the device's data queue (on a CUDA device, its one stream)."""
    _check_dtype(dtype)
    dev = _device(ctx)
    if dev.is_cuda:
        return cls(fn(*args, device=dev, **kwargs))
    with _am.data_queue(dev):
        return cls(fn(*args, device=dev, **kwargs))


def _no_axis(name, axis, keepdims):
    if axis is not None or keepdims:
        raise NotImplementedError(f"{name}(): asyncmlp reduces over every element only (axis=None, keepdims=False)")


class NDArray(Wrapped):
    """mxnet.nd.NDArray: a float32 array on a device, its ops queued.

    `x + 1`, `x * y`, `x - y`, `x / 2`, `-x`, `x @ y`, sum(), mean(), norm(),
    reshape(), attach_grad()/grad/backward(); the blockers wait_to_read(),
    asnumpy(), asscalar(), item(), and printing.
    """

    __slots__ = ()

    # --- what it is
    @property
    def size(self):
        """The number of elements."""
        return self._t.size

    @property
    def ndim(self):
        """The number of axes."""
        return self._t.ndim

    @property
    def dtype(self):
        """numpy.float32: asyncmlp holds float32 values."""
        return _numpy.float32

    @property
    def context(self):
        """The device (asyncmlp.Device) the array lives on."""
        return self._t.device

    ctx = context

    @property
    def device(self):
        """The device (asyncmlp.Device) the array lives on."""
        return self._t.device

    def sum(self, axis=None, keepdims=False):
        """The sum of every element, shape (1,) (MXNet 1.x's nd)."""
        _no_axis("sum", axis, keepdims)
        return self.__class__(self._t.sum().reshape(1))

    def mean(self, axis=None, keepdims=False):
        """The mean of every element, shape (1,) (MXNet 1.x's nd)."""
        _no_axis("mean", axis, keepdims)
        return self.__class__(self._t.mean().reshape(1))

    def norm(self):
        """The L2 norm of every element; sqrt is applied when it is read."""
        return _Norm(self)

    def reshape(self, *shape):
        """The same buffer with another shape (ints or a tuple; one -1 inferred); differentiable."""
        return self.__class__(self._t.reshape(*shape))

    def copyto(self, other):
        """A copy on another device (mx.cpu(i) / mx.gpu(i))."""
        return self.__class__(self._t.copyto(_device(other)))

    def as_in_context(self, ctx):
        """This array on `ctx`: itself when already there, else a queued copy."""
        dev = _device(ctx)
        return self if dev == self._t.device else self.__class__(self._t.copyto(dev))

    as_in_ctx = as_in_context

    # --- autograd
    def attach_grad(self, grad_req="write"):
        """Ask for this array's gradient (Gluon's grad_req='write': each backward replaces it)."""
        if grad_req != "write":
            raise NotImplementedError(f"attach_grad: asyncmlp writes gradients (grad_req='write'), not {grad_req!r}")
        self._t.requires_grad_()

    @property
    def grad(self):
        """The gradient the last backward() wrote (zeros before any; None without attach_grad())."""
        g = self._t.grad
        if g is not None:
            return self.__class__(g)
        return self.__class__(_am.zeros(self.shape, device=self._t.device)) if self._t.requires_grad else None

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        """Queue the gradients of this array with a head gradient of ones."""
        if out_grad is not None or retain_graph:
            raise NotImplementedError("backward: asyncmlp takes a head gradient of ones and frees the graph")
        self._t.backward()

    # --- blockers
    def asnumpy(self):
        """Wait, then a NumPy float32 copy."""
        return self._t.asnumpy()

    def asscalar(self):
        """Wait, then the one value as a Python float (a one-element array)."""
        if self._t.size != 1:
            raise ValueError("The current array is not a scalar")
        return self._t.item()

    def item(self):
        """Wait, then the one value as a Python float (a one-element array)."""
        if self._t.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self._t.item()

    def __repr__(self):
        """Waits, then MXNet's print: the values, then <NDArray 1x2 @cpu(0)>."""
        return self._show(self._t.asnumpy(), self._t.device)

    @staticmethod
    def _show(values, dev):
        shape = "x".join(str(n) for n in values.shape)
        return f"\n{values}\n<NDArray {shape} @{_context_name(dev)}>"


class _Norm:
    """An array's L2 norm, shape (1,): sum(x*x) is queued; the square root is
    taken when a blocker reads it (asyncmlp has no sqrt op)."""

    __slots__ = ("_sq", "_cls")

    def __init__(self, a):
        self._sq = (a._t * a._t).sum()
        self._cls = a.__class__

    shape = (1,)

    def wait_to_read(self):
        """Wait for the sum of squares."""
        self._sq.wait_to_read()

    def asscalar(self):
        """Wait, then the norm as a Python float."""
        return math.sqrt(self._sq.item())

    item = asscalar

    def __float__(self):
        return self.asscalar()

    def asnumpy(self):
        """Wait, then the norm as a NumPy float32 array of shape (1,)."""
        return _numpy.sqrt(self._sq.asnumpy()).reshape(1)

    def __repr__(self):
        return self._cls._show(self.asnumpy(), self._sq.device)
