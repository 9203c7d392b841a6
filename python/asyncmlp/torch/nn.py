"""torch.nn over asyncmlp's layers: Linear, ReLU, Sequential, MSELoss. A
module's forward queues asyncmlp ops and returns at once."""
import asyncmlp as _am

from ._tensor import Tensor

__all__ = ["Module", "Linear", "ReLU", "Sequential", "MSELoss"]


class Parameters(list):
    """What Module.parameters() returns: the tensors, and the module
    (asyncmlp's SGD updates a module's parameters: optim.SGD takes it)."""

    def __init__(self, module):
        super().__init__(Tensor(t) for t in module._b.parameters())
        self.module = module


class Module:
    """A PyTorch module over one asyncmlp block (self._b)."""

    def __call__(self, x):
        """Queue the forward pass."""
        return Tensor(self._b(x._t))

    def forward(self, x):
        """Queue the forward pass."""
        return self(x)

    def parameters(self, recurse=True):
        """The parameters, for optim.SGD."""
        return Parameters(self)

    def to(self, device):
        """The module itself: asyncmlp's layers live where their parameters were made."""
        return self

    def train(self, mode=True):
        """The module itself (no layer here behaves differently in training)."""
        return self

    def eval(self):
        """The module itself (no layer here behaves differently in evaluation)."""
        return self

    def __repr__(self):
        return self._b.describe()


class Linear(Module):
    """nn.Linear(in_features, out_features): y = x W^T + b (asyncmlp.Dense; its
    initialisation is asyncmlp's, W ~ U(-0.07, 0.07), b = 0)."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        if not bias:
            raise NotImplementedError("Linear: asyncmlp's Dense has a bias (bias=True)")
        if device is not None and str(device) != "cpu":
            raise NotImplementedError("Linear: asyncmlp makes the parameters on the input's device at the first forward")
        self._b = _am.Dense(int(out_features), "", int(in_features))


class ReLU(Module):
    """nn.ReLU(): max(x, 0)."""

    def __init__(self, inplace=False):
        self._b = _am.ReLU()


class Sequential(Module):
    """nn.Sequential(*modules): the modules, run in order."""

    def __init__(self, *modules):
        for m in modules:
            if not isinstance(m, Module):
                raise TypeError(f"{type(m).__name__} is not a Module subclass")
        self._b = _am.Sequential()
        self._b.add(*(m._b for m in modules))
        self._modules = list(modules)

    def __len__(self):
        return len(self._modules)

    def __getitem__(self, i):
        return self._modules[i]


class MSELoss:
    """nn.MSELoss(reduction='mean'): mean((input - target)^2) over every element
    ('sum': the sum; 'none': the squares). The shapes must be equal: asyncmlp
    does not broadcast."""

    def __init__(self, reduction="mean"):
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"{reduction} is not a valid value for reduction")
        self.reduction = reduction

    def __call__(self, input, target):
        d = input._t - target._t
        sq = d * d
        if self.reduction == "mean":
            return Tensor(sq.mean())
        return Tensor(sq.sum() if self.reduction == "sum" else sq)
