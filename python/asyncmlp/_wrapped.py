"""What the framework layers' array types share (asyncmlp.mxnet's NDArray,
asyncmlp.torch's Tensor): an asyncmlp.Tensor inside, and each arithmetic
operator one queued asyncmlp op that returns the caller's own type."""


def _inner(o):
    """The asyncmlp tensor inside a wrapper; a number as it is."""
    return o._t if isinstance(o, Wrapped) else o


class Wrapped:
    """An asyncmlp.Tensor (`_t`) behind a framework's array type: `x + 1`,
    `x * y`, `x - y`, `1 - x`, `x / 2`, `-x`, `x @ y`, len(), float(), and
    the blocker wait_to_read(). Subclasses add their framework's names."""

    __slots__ = ("_t",)

    def __init__(self, tensor):
        self._t = tensor

    @property
    def shape(self):
        """The shape, a tuple of ints."""
        return self._t.shape

    def __len__(self):
        """The length of the first axis."""
        return self._t.shape[0]

    # --- math: one queued asyncmlp op each
    def __add__(self, o):
        return self.__class__(self._t + _inner(o))

    def __radd__(self, o):
        return self.__class__(self._t + o)

    def __sub__(self, o):
        return self.__class__(self._t - _inner(o))

    def __rsub__(self, o):
        return self.__class__(o - self._t)

    def __mul__(self, o):
        return self.__class__(self._t * _inner(o))

    def __rmul__(self, o):
        return self.__class__(self._t * o)

    def __truediv__(self, o):
        return self.__class__(self._t / _inner(o))

    def __neg__(self):
        return self.__class__(-self._t)

    def __matmul__(self, o):
        return self.__class__(self._t @ o._t)

    # --- blockers
    def wait_to_read(self):
        """Wait for the op that last wrote this array."""
        self._t.wait_to_read()

    def __float__(self):
        return self.item()
