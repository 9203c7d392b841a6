"""gluon.nn over asyncmlp's layers: Sequential, Dense (deferred
initialisation: the input width is taken at the first forward), Activation.
A block's forward queues asyncmlp ops and returns at once; outside
autograd.record() it records nothing."""
import asyncmlp as _am

from .. import autograd as _autograd

__all__ = ["Block", "HybridBlock", "Sequential", "HybridSequential", "Dense", "Activation", "ParameterDict"]


class ParameterDict:
    """What collect_params() returns: the block's parameters, for gluon.Trainer.
    asyncmlp's Dense makes its parameters at its first forward, so the
    Trainer keeps the block and takes them at its first step."""

    def __init__(self, block):
        self._block = block

    def values(self):
        """The parameters made so far (NDArrays sharing their buffers)."""
        from .._array import NDArray
        return [NDArray(t) for t in self._block._b.parameters()]

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        """A no-op: asyncmlp's layers initialise themselves at their first forward."""

    def __len__(self):
        return len(self._block._b.parameters())

    def __repr__(self):
        return f"ParameterDict of {self._block._b.describe()} ({len(self)} made)"


class Block:
    """A Gluon block over one asyncmlp block (self._b)."""

    def __call__(self, x):
        """Queue the forward pass; recorded for backward only inside autograd.record()."""
        if _autograd._recording:
            return x.__class__(self._b(x._t))
        with _am.no_grad():
            return x.__class__(self._b(x._t))

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        """A no-op: asyncmlp's layers initialise themselves (W ~ U(-0.07, 0.07), b = 0,
        MXNet's default) on the input's device at their first forward."""

    def collect_params(self, select=None):
        """This block's parameters, for gluon.Trainer."""
        if select is not None:
            raise NotImplementedError("collect_params: asyncmlp selects every parameter (select=None)")
        return ParameterDict(self)

    def hybridize(self, active=True, **kwargs):
        """A no-op: asyncmlp queues each op as it comes."""

    def __repr__(self):
        return self._b.describe()


HybridBlock = Block


class Dense(Block):
    """gluon.nn.Dense(units, activation='relu'|None, in_units=0): y = act(x W^T + b)."""

    def __init__(self, units, activation=None, use_bias=True, flatten=True, in_units=0, **kwargs):
        if activation not in (None, "relu"):
            raise NotImplementedError(f"Dense: asyncmlp has activation 'relu' or None (got {activation!r})")
        if not use_bias:
            raise NotImplementedError("Dense: asyncmlp's Dense has a bias (use_bias=True)")
        if kwargs:
            raise NotImplementedError(f"Dense: asyncmlp takes units, activation and in_units (not {sorted(kwargs)})")
        self._b = _am.Dense(int(units), activation or "", int(in_units))


class Activation(Block):
    """gluon.nn.Activation('relu')."""

    def __init__(self, activation):
        if activation != "relu":
            raise NotImplementedError(f"Activation: asyncmlp has 'relu' only (got {activation!r})")
        self._b = _am.ReLU()


class Sequential(Block):
    """gluon.nn.Sequential: add(*blocks) stacks blocks, run in order."""

    def __init__(self, prefix=None, params=None):
        self._b = _am.Sequential()
        self._children = []

    def add(self, *blocks):
        """Append blocks (Dense, Activation, Sequential)."""
        for b in blocks:
            if not isinstance(b, Block):
                raise TypeError(f"Sequential.add takes gluon blocks (got {type(b).__name__})")
        self._b.add(*(b._b for b in blocks))
        self._children.extend(blocks)

    def __len__(self):
        return len(self._children)

    def __getitem__(self, i):
        return self._children[i]


HybridSequential = Sequential
