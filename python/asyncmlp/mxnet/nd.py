"""mxnet.nd over asyncmlp (the first edition's API): NDArray, its creation
(queued on the device's data queue, ahead of the main queue, as MXNet's
engine runs it), dot, norm, waitall and nd.random."""
import numpy as _numpy

import asyncmlp as _am

from ._array import NDArray, _make, _shape

__all__ = ["NDArray", "array", "ones", "zeros", "full", "dot", "norm", "waitall", "random"]


def array(source_array, ctx=None, dtype=None):
    """An NDArray holding a copy of `source_array` (a NumPy array, a list, an NDArray) as float32."""
    if isinstance(source_array, NDArray):
        source_array = source_array.asnumpy()
    return _make(NDArray, _am.array, ctx, dtype, _numpy.asarray(source_array, dtype=_numpy.float32))


def ones(shape, ctx=None, dtype=None):
    """An NDArray of ones (queued)."""
    return _make(NDArray, _am.ones, ctx, dtype, _shape(shape))


def zeros(shape, ctx=None, dtype=None):
    """An NDArray of zeros (queued)."""
    return _make(NDArray, _am.zeros, ctx, dtype, _shape(shape))


def full(shape, val, ctx=None, dtype=None):
    """An NDArray filled with `val` (queued)."""
    return _make(NDArray, _am.full, ctx, dtype, _shape(shape), float(val))


def dot(lhs, rhs, transpose_a=False, transpose_b=False):
    """The matrix product of two 2-D NDArrays (queued)."""
    if transpose_a or transpose_b:
        raise NotImplementedError("nd.dot: asyncmlp's dot takes no transpose_a/transpose_b")
    return NDArray(_am.dot(lhs._t, rhs._t))


def norm(data):
    """The L2 norm of every element (see NDArray.norm)."""
    return data.norm()


def waitall():
    """Wait for every queued op on every device."""
    _am.waitall()


class random:
    """mxnet.nd.random: draws queued on the device's data queue (manual_seed's stream)."""

    @staticmethod
    def normal(loc=0, scale=1, shape=(1,), dtype=None, ctx=None):
        """An NDArray drawn from N(loc, scale^2)."""
        return _make(NDArray, _am.normal, ctx, dtype, float(loc), float(scale), _shape(shape))

    @staticmethod
    def uniform(low=0, high=1, shape=(1,), dtype=None, ctx=None):
        """An NDArray drawn from U[low, high)."""
        return _make(NDArray, _am.uniform, ctx, dtype, float(low), float(high), _shape(shape))

    @staticmethod
    def seed(seed_state, ctx="all"):
        """Seed the one random stream every device draws from."""
        _am.manual_seed(int(seed_state))
