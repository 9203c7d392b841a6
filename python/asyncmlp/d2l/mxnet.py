"""d2l's MXNet helpers over asyncmlp.mxnet: Benchmark, Timer, try_gpu, try_all_gpus, cpu, gpu, num_gpus."""
from asyncmlp.mxnet import npx as _npx

from ._common import Benchmark, Timer

__all__ = ["Benchmark", "Timer", "cpu", "gpu", "num_gpus", "try_gpu", "try_all_gpus"]


def cpu():
    """The CPU device."""
    return _npx.cpu()


def gpu(i=0):
    """GPU i."""
    return _npx.gpu(i)


def num_gpus():
    """The number of GPUs visible."""
    return _npx.num_gpus()


def try_gpu(i=0):
    """GPU i if there is one, else the CPU."""
    return gpu(i) if num_gpus() >= i + 1 else cpu()


def try_all_gpus():
    """Every GPU, or [cpu()] if there is none."""
    return [gpu(i) for i in range(num_gpus())] or [cpu()]
