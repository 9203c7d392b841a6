"""The first edition's d2lzh (`import d2lzh as d2l`) over asyncmlp.mxnet: the
MXNet stand-in's helpers with the first edition's Benchmark, which printed
'Workloads are queued. time: 0.0010 sec' ('time: ...' without a prefix)."""
import time

from .mxnet import Timer, cpu, gpu, num_gpus, try_all_gpus, try_gpu

__all__ = ["Benchmark", "Timer", "cpu", "gpu", "num_gpus", "try_gpu", "try_all_gpus"]


class Benchmark:
    """d2lzh.Benchmark(prefix=None): prints '<prefix> time: 0.1234 sec'."""

    def __init__(self, prefix=None):
        self.prefix = prefix + " " if prefix else ""

    def __enter__(self):
        self.start = time.time()

    def __exit__(self, *args):
        print("%stime: %.4f sec" % (self.prefix, time.time() - self.start))
