"""torch.optim over asyncmlp.SGD."""
import asyncmlp as _am

from .nn import Parameters

__all__ = ["SGD"]


class SGD:
    """optim.SGD(net.parameters(), lr): step() queues w -= lr * grad for every
    parameter (PyTorch's semantics: no division by the batch size; momentum
    and weight_decay as PyTorch's when the learning rate stays fixed);
    zero_grad() drops the gradients. Never blocks."""

    def __init__(self, params, lr, momentum=0, dampening=0, weight_decay=0, nesterov=False):
        if not isinstance(params, Parameters):
            raise TypeError("SGD: pass module.parameters() of an asyncmlp.torch.nn module "
                            "(asyncmlp's SGD updates a module's parameters)")
        if dampening or nesterov:
            raise NotImplementedError("SGD: asyncmlp's SGD has no dampening or nesterov")
        self.lr = float(lr)
        self._sgd = _am.SGD(params.module._b, self.lr, float(momentum), float(weight_decay))

    def step(self):
        """Queue one update per parameter: w -= lr * grad."""
        self._sgd.step(1)

    def zero_grad(self, set_to_none=True):
        """Drop the gradients (their memory returns once the queued updates ran)."""
        self._sgd.zero_grad()
