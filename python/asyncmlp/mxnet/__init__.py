"""MXNet's Python names over asyncmlp, for the d2l chapter "Asynchronous
Computation" as the book wrote it, only its imports mapped
(`from mxnet import nd` -> `from asyncmlp.mxnet import nd`):

    nd       the first edition's arrays: nd.random.uniform/normal, nd.ones, nd.dot, nd.waitall
    np, npx  the current edition's: np.random.normal, np.dot, npx.waitall, npx.set_np
    autograd record(); x.attach_grad(), x.grad, l.backward()
    gluon    nn.Sequential, nn.Dense, loss.L2Loss, Trainer('sgd')
    cpu/gpu  devices (asyncmlp.Device), passed as ctx=

A thin layer: each op is one queued asyncmlp call. MXNet's memory
semantics at import: asyncmlp.set_alloc('run') (an op's outputs get memory
when it runs, MXNet's delayed allocation), and data made from nothing is
queued on the device's data queue, so it runs ahead as in MXNet's engine.
"""
import asyncmlp as _am

from . import autograd, context, gluon, nd, np, npx
from .context import cpu, gpu, num_gpus
from ._array import NDArray

__all__ = ["autograd", "gluon", "nd", "np", "npx", "cpu", "gpu", "num_gpus", "context", "NDArray", "ALLOC"]

#: The allocation policy MXNet's engine has (set at import; asyncmlp.set_alloc(ALLOC) restores it).
ALLOC = "run"
_am.set_alloc(ALLOC)
