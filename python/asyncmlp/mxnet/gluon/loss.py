"""gluon.loss over asyncmlp: L2Loss, built from differentiable asyncmlp ops so
that the gradient reaches both arguments (the first edition calls
loss(y, net(X)): the network's output is the label)."""
import asyncmlp as _am

from .. import autograd as _autograd

__all__ = ["Loss", "L2Loss"]


class Loss:
    """Base of Gluon's losses: called as loss(pred, label)."""

    def __call__(self, pred, label, sample_weight=None):
        if sample_weight is not None:
            raise NotImplementedError(f"{type(self).__name__}: sample_weight is not supported")
        if _autograd._recording:
            return pred.__class__(self._forward(pred._t, label._t))
        with _am.no_grad():
            return pred.__class__(self._forward(pred._t, label._t))


class L2Loss(Loss):
    """Gluon's L2Loss: label reshaped to pred's shape, weight/2 * (pred - label)^2,
    averaged over every axis but the batch axis: shape (batch,)."""

    def __init__(self, weight=1.0, batch_axis=0):
        if batch_axis != 0:
            raise NotImplementedError("L2Loss: asyncmlp's batch axis is 0")
        self._half_weight = 0.5 * float(weight)

    def _forward(self, pred, label):
        d = pred - label.reshape(pred.shape)
        loss = d * d * self._half_weight
        if loss.ndim <= 1:
            return loss
        batch = loss.shape[0]
        rest = loss.size // batch
        loss = loss.reshape(batch, rest)
        if rest > 1:  # the mean of each row, as a product with a column of 1/rest
            loss = loss @ _am.full((rest, 1), 1.0 / rest, device=loss.device)
        return loss.reshape(batch)
