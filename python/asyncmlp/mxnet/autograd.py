"""mxnet.autograd over asyncmlp: `with autograd.record():` is the scope in
which Gluon blocks record for backward (outside it a block's forward records
nothing, as in MXNet); arrays given attach_grad() get their gradients from
backward() (grad_req='write')."""
import contextlib

import asyncmlp as _am

__all__ = ["record", "pause", "is_recording", "is_training"]

_recording = False
_training = False


@contextlib.contextmanager
def _scope(recording, training):
    global _recording, _training
    saved = _recording, _training, _am.grad_enabled()
    _recording, _training = recording, training
    _am.set_grad_enabled(recording)
    try:
        yield
    finally:
        _recording, _training = saved[0], saved[1]
        _am.set_grad_enabled(saved[2])


def record(train_mode=True):
    """A scope whose ops are recorded for backward()."""
    return _scope(True, train_mode)


def pause(train_mode=False):
    """A scope inside record() whose ops are not recorded."""
    return _scope(False, train_mode)


def is_recording():
    """Whether ops are being recorded (inside record())."""
    return _recording


def is_training():
    """Whether the scope is in training mode."""
    return _training
