"""mxnet.npx over asyncmlp: the extensions the current edition uses beside mxnet.np."""
import asyncmlp as _am

from .context import cpu, gpu, num_gpus  # noqa: F401 (npx.cpu(), as MXNet has them)

__all__ = ["set_np", "reset_np", "waitall", "cpu", "gpu", "num_gpus"]


def set_np(shape=True, array=True, dtype=False):
    """MXNet's switch to NumPy semantics: a no-op (asyncmlp.mxnet.np is always NumPy-like)."""


def reset_np():
    """MXNet's switch back to the legacy semantics: a no-op."""


def waitall():
    """Wait for every queued op on every device."""
    _am.waitall()

