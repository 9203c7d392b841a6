"""mxnet.npx over asyncmlp: the extensions the current edition uses beside mxnet.np."""
import asyncmlp as _am

__all__ = ["set_np", "reset_np", "waitall", "cpu", "gpu", "num_gpus"]


def set_np(shape=True, array=True, dtype=False):
    """MXNet's switch to NumPy semantics: a no-op (asyncmlp.mxnet.np is always NumPy-like)."""


def reset_np():
    """MXNet's switch back to the legacy semantics: a no-op."""


def waitall():
    """Wait for every queued op on every device."""
    _am.waitall()


def cpu(device_id=0):
    """CPU device `device_id` (an asyncmlp.Device)."""
    return _am.cpu(device_id)


def gpu(device_id=0):
    """GPU device `device_id` (an asyncmlp.Device; using an absent one raises asyncmlp.DeviceError)."""
    return _am.gpu(device_id)


def num_gpus():
    """The number of GPUs this process sees."""
    return _am.num_gpus()
