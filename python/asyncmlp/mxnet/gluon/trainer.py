"""gluon.Trainer over asyncmlp.SGD."""
import asyncmlp as _am

from .nn import ParameterDict

# Optimizers MXNet has and asyncmlp has not (asked for by name: NotImplementedError).
_MXNET_OPTIMIZERS = {"adam", "adamw", "adagrad", "adadelta", "adamax", "nadam", "rmsprop", "nag", "ftrl", "ftml",
                     "signum", "lamb", "lars", "lans", "sgld", "dcasgd"}


class Trainer:
    """gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': lr}):
    step(batch_size) queues w -= lr * grad / batch_size (plus momentum and wd
    when given) for every parameter of the net; it never blocks."""

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device"):
        if not isinstance(params, ParameterDict):
            raise TypeError("Trainer: pass net.collect_params() of an asyncmlp.mxnet.gluon block")
        name = optimizer.lower() if isinstance(optimizer, str) else optimizer
        if name != "sgd":
            if name in _MXNET_OPTIMIZERS:
                raise NotImplementedError(f"Trainer: asyncmlp has SGD only (got {optimizer!r})")
            raise ValueError(f"Cannot find optimizer {optimizer!r}")
        opts = dict(optimizer_params or {})
        lr = opts.pop("learning_rate", 0.01)
        momentum = opts.pop("momentum", 0.0)
        wd = opts.pop("wd", 0.0)
        if opts:
            raise NotImplementedError(f"Trainer: asyncmlp's SGD takes learning_rate, momentum and wd (not {sorted(opts)})")
        self._lr = float(lr)
        self._sgd = _am.SGD(params._block._b, self._lr, float(momentum), float(wd))

    @property
    def learning_rate(self):
        """The learning rate."""
        return self._lr

    def step(self, batch_size, ignore_stale_grad=False):
        """Queue one update per parameter, the gradients scaled by 1/batch_size."""
        self._sgd.step(int(batch_size))
