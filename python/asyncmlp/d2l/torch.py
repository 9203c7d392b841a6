"""d2l's PyTorch helpers over asyncmlp.torch: Benchmark, Timer, try_gpu, try_all_gpus, cpu, gpu, num_gpus."""
import asyncmlp.torch as _torch

from ._common import Benchmark, Timer

__all__ = ["Benchmark", "Timer", "cpu", "gpu", "num_gpus", "try_gpu", "try_all_gpus"]


def cpu():
    """The CPU device."""
    return _torch.device("cpu")


def gpu(i=0):
    """GPU i."""
    return _torch.device(f"cuda:{i}")


def num_gpus():
    """The number of GPUs visible."""
    return _torch.cuda.device_count()


def try_gpu(i=0):
    """GPU i if there is one, else the CPU."""
    return gpu(i) if num_gpus() >= i + 1 else cpu()


def try_all_gpus():
    """Every GPU, or [cpu()] if there is none."""
    return [gpu(i) for i in range(num_gpus())] or [cpu()]
