"""A stand-in for the d2l package's helpers the chapter "Asynchronous
Computation" uses, over asyncmlp's framework layers:

    from asyncmlp.d2l import torch as d2l     # from d2l import torch as d2l
    from asyncmlp.d2l import mxnet as d2l     # from d2l import mxnet as d2l
    from asyncmlp.d2l import d2lzh as d2l     # the first edition's import d2lzh as d2l

Each has Benchmark, Timer, try_gpu, try_all_gpus, cpu, gpu, num_gpus.
"""
