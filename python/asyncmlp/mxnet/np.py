"""mxnet.np over asyncmlp (the current edition's API): ndarray, its creation
(queued on the device's data queue, ahead of the main queue, as MXNet's
engine runs it), dot and np.random. Blockers: npx.waitall(),
wait_to_read(), asnumpy(), item() and printing."""
import numpy as _numpy

import asyncmlp as _am

from ._array import NDArray, _context_name, _make, _no_axis

__all__ = ["ndarray", "array", "ones", "zeros", "full", "dot", "matmul", "random"]


class ndarray(NDArray):
    """mxnet.np.ndarray: NDArray's ops and blockers, NumPy's reductions (shape ())
    and NumPy's print: array([[3., 3.]])."""

    __slots__ = ()

    def sum(self, axis=None, keepdims=False):
        """The sum of every element, shape ()."""
        _no_axis("sum", axis, keepdims)
        return ndarray(self._t.sum())

    def mean(self, axis=None, keepdims=False):
        """The mean of every element, shape ()."""
        _no_axis("mean", axis, keepdims)
        return ndarray(self._t.mean())

    @staticmethod
    def _show(values, dev):
        text = repr(values)  # array([[3., 3.]], dtype=float32): float32 is the default, unsaid
        text = text[: text.rindex(",")] + ")"
        if dev != _am.cpu():
            text = text[:-1] + f", ctx={_context_name(dev)})"
        return text


def _size(size):
    if size is None:
        return ()
    return (size,) if isinstance(size, int) else tuple(size)


def _ctx(ctx, device):
    if ctx is not None and device is not None:
        raise TypeError("pass ctx= or device=, not both")
    return ctx if ctx is not None else device


def array(object, dtype=None, ctx=None, device=None):
    """An ndarray holding a copy of `object` (a NumPy array, a list, an ndarray) as float32."""
    if isinstance(object, NDArray):
        object = object.asnumpy()
    return _make(ndarray, _am.array, _ctx(ctx, device), dtype, _numpy.asarray(object, dtype=_numpy.float32))


def ones(shape, dtype=None, order="C", ctx=None, device=None):
    """An ndarray of ones (queued)."""
    return _make(ndarray, _am.ones, _ctx(ctx, device), dtype, _size(shape))


def zeros(shape, dtype=None, order="C", ctx=None, device=None):
    """An ndarray of zeros (queued)."""
    return _make(ndarray, _am.zeros, _ctx(ctx, device), dtype, _size(shape))


def full(shape, fill_value, dtype=None, order="C", ctx=None, device=None):
    """An ndarray filled with `fill_value` (queued)."""
    return _make(ndarray, _am.full, _ctx(ctx, device), dtype, _size(shape), float(fill_value))


def dot(a, b):
    """The matrix product of two 2-D ndarrays (queued)."""
    return ndarray(_am.dot(a._t, b._t))


def matmul(a, b):
    """The matrix product of two 2-D ndarrays (queued)."""
    return ndarray(_am.matmul(a._t, b._t))


class random:
    """mxnet.np.random: draws queued on the device's data queue (manual_seed's stream)."""

    @staticmethod
    def normal(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None, device=None):
        """An ndarray drawn from N(loc, scale^2)."""
        return _make(ndarray, _am.normal, _ctx(ctx, device), dtype, float(loc), float(scale), _size(size))

    @staticmethod
    def uniform(low=0.0, high=1.0, size=None, dtype=None, ctx=None, device=None):
        """An ndarray drawn from U[low, high)."""
        return _make(ndarray, _am.uniform, _ctx(ctx, device), dtype, float(low), float(high), _size(size))

    @staticmethod
    def seed(seed, ctx="all"):
        """Seed the one random stream every device draws from."""
        _am.manual_seed(int(seed))
