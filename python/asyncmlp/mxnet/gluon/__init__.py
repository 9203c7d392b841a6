"""mxnet.gluon over asyncmlp: nn (Sequential, Dense), loss (L2Loss) and
Trainer ('sgd': w -= lr * grad / batch_size, asyncmlp.SGD's own semantics)."""
from . import loss, nn
from .nn import Block
from .trainer import Trainer

__all__ = ["Block", "Trainer", "loss", "nn"]
