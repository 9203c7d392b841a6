"""torch.Tensor and torch.device over asyncmlp: a Tensor wraps one
asyncmlp.Tensor; every op is one queued asyncmlp call returning at once; the
blockers are PyTorch's: item(), numpy(), cpu() of a CUDA tensor, printing and
torch.cuda.synchronize()."""
import numpy as _numpy

import asyncmlp as _am

from .._wrapped import Wrapped


class device:
    """torch.device('cpu' | 'cuda' | 'cuda:1'), or torch.device('cuda', 1)."""

    __slots__ = ("type", "index", "_d")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        elif ":" in type:
            if index is not None:
                raise ValueError(f"device(): an index given twice ({type!r} and {index})")
            type, index = type.split(":", 1)
            index = int(index)
        if type not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
        self.type, self.index = type, index
        self._d = _am.cpu(index or 0) if type == "cpu" else _am.cuda(index or 0)

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device(type='{self.type}')" if self.index is None else f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other):
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))


def _device(d):
    """An asyncmlp.Device from None (the CPU), a torch.device, 'cuda:0' or an asyncmlp.Device."""
    if d is None:
        return _am.cpu()
    if isinstance(d, device):
        return d._d
    if isinstance(d, str):
        return device(d)._d
    if isinstance(d, _am.Device):
        return d
    if isinstance(d, int):
        return _am.cuda(d)
    raise TypeError(f"device must be a torch.device, a string or an int (got {type(d).__name__})")


class Tensor(Wrapped):
    """torch.Tensor: a float32 tensor on a device, its ops queued.

    `x * y + 2`, `x - y`, `x / 2`, `-x`, `x @ y`, sum(), mean(), reshape()/view(),
    requires_grad_(), .grad, backward(); the blockers item(), numpy(),
    cpu() of a CUDA tensor, and printing.
    """

    __slots__ = ()

    # --- what it is
    def size(self, dim=None):
        """The shape, or the length of axis `dim`."""
        return self._t.shape if dim is None else self._t.shape[dim]

    def dim(self):
        """The number of axes."""
        return self._t.ndim

    ndim = property(dim, doc="The number of axes.")

    def numel(self):
        """The number of elements."""
        return self._t.size

    @property
    def dtype(self):
        """'torch.float32': asyncmlp holds float32 values."""
        return "torch.float32"

    @property
    def device(self):
        """The torch.device the tensor lives on."""
        d = self._t.device
        return device("cuda", d.index) if d.is_cuda else device("cpu")

    @property
    def is_cuda(self):
        """Whether the tensor lives on a GPU."""
        return self._t.device.is_cuda

    def sum(self, dim=None, keepdim=False):
        """The sum of every element, shape ()."""
        if dim is not None or keepdim:
            raise NotImplementedError("sum(): asyncmlp reduces over every element only (dim=None)")
        return Tensor(self._t.sum())

    def mean(self, dim=None, keepdim=False):
        """The mean of every element, shape ()."""
        if dim is not None or keepdim:
            raise NotImplementedError("mean(): asyncmlp reduces over every element only (dim=None)")
        return Tensor(self._t.mean())

    def reshape(self, *shape):
        """The same buffer with another shape (ints or a tuple; one -1 inferred); differentiable."""
        return Tensor(self._t.reshape(*shape))

    view = reshape

    def to(self, device):
        """This tensor on `device`: itself when already there, else a queued copy."""
        dev = _device(device)
        return self if dev == self._t.device else Tensor(self._t.copyto(dev))

    def cpu(self):
        """This tensor on the CPU: itself when there, else a copy (waits, as PyTorch's does)."""
        if not self._t.device.is_cuda:
            return self
        t = Tensor(self._t.copyto(_am.cpu()))
        t._t.wait_to_read()
        return t

    def cuda(self, device=None):
        """This tensor on GPU `device` (0 by default)."""
        return self.to(_am.cuda(0) if device is None else _device(device))

    # --- autograd
    @property
    def requires_grad(self):
        """Whether ops on this tensor record for backward()."""
        return self._t.requires_grad

    def requires_grad_(self, requires_grad=True):
        """Ask for this tensor's gradient; returns the tensor."""
        self._t.requires_grad_(requires_grad)
        return self

    @property
    def grad(self):
        """The gradient the last backward() wrote, or None."""
        g = self._t.grad
        return None if g is None else Tensor(g)

    def backward(self, gradient=None, retain_graph=None, create_graph=False):
        """Queue the gradients of this tensor (a one-element tensor: head gradient 1).
        asyncmlp writes the leaves' gradients (each backward replaces them)."""
        if gradient is not None or retain_graph or create_graph:
            raise NotImplementedError("backward: asyncmlp takes a head gradient of ones and frees the graph")
        if self._t.size != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        self._t.backward()

    # --- blockers
    def item(self):
        """Wait, then the one value as a Python float."""
        if self._t.size != 1:
            raise RuntimeError(f"a Tensor with {self._t.size} elements cannot be converted to Scalar")
        return self._t.item()

    def numpy(self):
        """Wait, then a NumPy float32 copy (a CPU tensor only, as in PyTorch)."""
        if self._t.device.is_cuda:
            raise TypeError(f"can't convert {self._t.device} device type tensor to numpy. "
                            "Use Tensor.cpu() to copy the tensor to host memory first.")
        if self._t.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad.")
        return self._t.asnumpy()

    def __repr__(self):
        """Waits, then PyTorch's print: tensor([[3., 3.]]) (, device='cuda:0')."""
        a = self._t.asnumpy()
        whole = bool(_numpy.all(a == _numpy.round(a)))  # 3. as PyTorch prints it; else 4 decimals: 0.9460
        text = "tensor(" + _numpy.array2string(a, precision=4, floatmode="maxprec" if whole else "fixed",
                                                separator=", ", prefix="tensor(")
        d = self._t.device
        if d.is_cuda:
            text += f", device='cuda:{d.index}'"
        if self._t.requires_grad:
            text += ", requires_grad=True"
        return text + ")"
