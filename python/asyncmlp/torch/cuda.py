"""torch.cuda over asyncmlp: synchronize, is_available, device_count."""
import asyncmlp as _am

__all__ = ["synchronize", "is_available", "device_count", "current_device"]


def synchronize(device=None):
    """Wait until the queued work has finished (asyncmlp.waitall(): every queue).
    PyTorch waits for one GPU and refuses a CPU device; here a CPU device's queue
    is waited for too, so the book's cell means the same where d2l.try_gpu()
    fell back to the CPU."""
    _am.waitall()


def is_available():
    """Whether a GPU is visible."""
    return _am.num_gpus() > 0


def device_count():
    """The number of GPUs visible."""
    return _am.num_gpus()


def current_device():
    """The GPU ops go to by default: 0."""
    return 0
