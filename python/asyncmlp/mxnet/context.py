"""mxnet.context over asyncmlp: the devices, as asyncmlp.Device (MXNet's
`mx.cpu()`, `mx.gpu(1)`, also `npx.cpu()`), passed where MXNet takes ctx=."""
import asyncmlp as _am

__all__ = ["cpu", "gpu", "num_gpus", "current_context"]


def cpu(device_id=0):
    """CPU device `device_id` (an asyncmlp.Device)."""
    return _am.cpu(device_id)


def gpu(device_id=0):
    """GPU device `device_id` (an asyncmlp.Device; using an absent one raises asyncmlp.DeviceError)."""
    return _am.gpu(device_id)


def num_gpus():
    """The number of GPUs this process sees."""
    return _am.num_gpus()


def current_context():
    """The default device: cpu(0)."""
    return _am.cpu()
