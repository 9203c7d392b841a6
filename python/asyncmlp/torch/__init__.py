"""PyTorch's Python names over asyncmlp, for the d2l chapter "Asynchronous
Computation" as the book wrote it, only its imports mapped
(`import torch` -> `import asyncmlp.torch as torch`):

    randn, rand, ones, zeros, full, tensor   creation (size as ints, a tuple or size=; device=)
    mm, matmul                                the matrix product
    device, cuda.synchronize/is_available/device_count
    nn.Linear, nn.ReLU, nn.Sequential, nn.MSELoss;  optim.SGD (w -= lr * grad)
    Tensor: x * y + 2, item(), numpy(), cpu(), backward(), printing

A thin layer: each op is one queued asyncmlp call. PyTorch's memory
semantics at import: asyncmlp.set_alloc('stream') (the caching allocator: a
tensor Python let go of lends its block at once to the next op on its queue).
"""
import numpy as _numpy

import asyncmlp as _am

from . import cuda, nn, optim
from ._tensor import Tensor, _device, device

__all__ = ["Tensor", "device", "randn", "rand", "ones", "zeros", "full", "tensor", "mm", "matmul",
           "manual_seed", "no_grad", "float32", "cuda", "nn", "optim", "ALLOC"]

#: The allocation policy PyTorch's caching allocator has (set at import; asyncmlp.set_alloc(ALLOC) restores it).
ALLOC = "stream"
_am.set_alloc(ALLOC)

float32 = "torch.float32"
no_grad = _am.no_grad


def _size(size, shape):
    """The shape from size= or from the positional ints / tuple."""
    if size is not None:
        if shape:
            raise TypeError("pass the size as ints, a tuple or size=, not both")
        shape = (size,)
    if len(shape) == 1 and not isinstance(shape[0], int):
        return tuple(shape[0])
    return tuple(shape)


def _check(dtype):
    if dtype not in (None, float32):
        raise TypeError(f"asyncmlp holds float32 values only (got dtype={dtype!r})")


def _made(t, requires_grad):
    return Tensor(t.requires_grad_() if requires_grad else t)


def randn(*shape, size=None, device=None, dtype=None, requires_grad=False):
    """A tensor drawn from N(0, 1) (queued): randn(2, 3), randn((2, 3)), randn(size=(2, 3))."""
    _check(dtype)
    return _made(_am.normal(0.0, 1.0, _size(size, shape), _device(device)), requires_grad)


def rand(*shape, size=None, device=None, dtype=None, requires_grad=False):
    """A tensor drawn from U[0, 1) (queued)."""
    _check(dtype)
    return _made(_am.uniform(0.0, 1.0, _size(size, shape), _device(device)), requires_grad)


def ones(*shape, size=None, device=None, dtype=None, requires_grad=False):
    """A tensor of ones (queued)."""
    _check(dtype)
    return _made(_am.ones(_size(size, shape), _device(device)), requires_grad)


def zeros(*shape, size=None, device=None, dtype=None, requires_grad=False):
    """A tensor of zeros (queued)."""
    _check(dtype)
    return _made(_am.zeros(_size(size, shape), _device(device)), requires_grad)


def full(size, fill_value, device=None, dtype=None, requires_grad=False):
    """A tensor filled with `fill_value` (queued)."""
    _check(dtype)
    return _made(_am.full(_size(size, ()), float(fill_value), _device(device)), requires_grad)


def tensor(data, device=None, dtype=None, requires_grad=False):
    """A tensor holding a copy of `data` (a list, a NumPy array) as float32."""
    _check(dtype)
    return _made(_am.array(_numpy.asarray(data, dtype=_numpy.float32), _device(device)), requires_grad)


def mm(input, mat2):
    """The matrix product of two 2-D tensors (queued)."""
    return Tensor(_am.matmul(input._t, mat2._t))


def matmul(input, other):
    """The matrix product of two 2-D tensors (queued)."""
    return Tensor(_am.matmul(input._t, other._t))


def manual_seed(seed):
    """Seed the one random stream every device draws from."""
    _am.manual_seed(int(seed))
