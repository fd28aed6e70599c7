"""The cross-entropy losses of `af.nn`: the SoftmaxCrossEntropyWithLogits and
SparseSoftmaxCrossEntropyWithLogits ops with their gradients, and TF1's public functions around them
(`softmax_cross_entropy_with_logits[_v2]`, `sparse_softmax_cross_entropy_with_logits`,
`sigmoid_cross_entropy_with_logits`). Re-exported by `nn_ops`, whose softmax pieces they use.

Both ops return the loss and `backprop` (softmax - labels). Their gradient for the logits is
backprop * grad_loss, plus, when `backprop` itself received a gradient, the softmax's derivative
applied to it (TF's second-order term).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncflow import dtypes
from asyncflow.graph import Operation, Tensor, name_scope
from asyncflow.ops import array, math
from asyncflow.ops.grad_util import unbroadcast
from asyncflow.ops.nn_ops import _axis_arg, _dense, _op, _softmax_rows, _wide, log_softmax_op, softmax_op
from asyncflow.ops.registry import FLOAT, BuildContext, constant, constant_value, convert_to_tensor, op
from asyncflow.ops.shape_fns import broadcast_shapes
from asyncflow.shapes import TensorShape, unknown_shape


# -- cross-entropy losses -----------------------------------------------------------------------------------
def _xent_shape(b: BuildContext) -> list[TensorShape]:
    features, labels = b.shape(0), b.shape(1)
    try:
        both = broadcast_shapes(features, labels)
    except ValueError:
        raise b.error(f"Dimensions must be equal: logits have shape {features} and labels {labels}") from None
    if both.ndims is None:
        return [unknown_shape(1), unknown_shape(2)]
    if both.ndims != 2:
        raise b.error(f"Shape must be broadcasted with rank 2, but is rank {both.ndims} (logits {features}, "
                      f"labels {labels})")
    return [TensorShape([both.dims[0]]), both]


@op("SoftmaxCrossEntropyWithLogits", inputs="features: T, labels: T", outputs="loss: T, backprop: T",
    types={"T": FLOAT}, shape=_xent_shape)
def softmax_cross_entropy_with_logits_op(k, features, labels):
    features, labels = _wide(features), _wide(labels)
    if features.ndim != 2 or labels.ndim != 2:
        raise ValueError(f"SoftmaxCrossEntropyWithLogits '{k.name}': logits and labels must be 2-dimensional, "
                         f"got shapes {list(features.shape)} and {list(labels.shape)}")
    features, labels = np.broadcast_arrays(features, labels)
    shifted, log_sum = _softmax_rows(features)
    with np.errstate(invalid="ignore"):  # 0 * inf for a -inf logit gives NaN, as TF's kernel does
        loss = np.sum(labels * (log_sum - shifted), axis=-1)
        backprop = np.exp(shifted - log_sum) - labels
    out = k.out_dtypes[0]
    return loss.astype(out, copy=False), backprop.astype(out, copy=False)


def _is_zeros(t: Tensor) -> bool:
    """Whether `t` is known to be all zeros when the graph is built (what the driver hands an unused output)."""
    if t.op.type == "ZerosLike":
        return True
    if t.op.type == "Fill":
        value = constant_value(t.op.inputs[1])
        return value is not None and not np.any(value)
    if t.op.type == "Const":
        return not np.any(constant_value(t))
    return False


def _xent_logits_grad(op: Operation, grad_loss: Any, grad_backprop: Any) -> Tensor:
    """d/d logits of a softmax cross-entropy op: backprop * grad_loss, plus, when the `backprop` output
    itself received a gradient g, the softmax's derivative applied to it, (g - sum(g * p, -1)) * p."""
    grad = array.expand_dims(_dense(grad_loss), -1) * op.outputs[1]
    if grad_backprop is not None:
        grad_backprop = _dense(grad_backprop)
        if not _is_zeros(grad_backprop):
            probs = softmax_op(op.inputs[0])
            grad = grad + (grad_backprop - math.reduce_sum(grad_backprop * probs, -1, keepdims=True)) * probs
    return unbroadcast(grad, op.inputs[0])


@softmax_cross_entropy_with_logits_op.gradient
def _softmax_cross_entropy_with_logits_grad(op: Operation, grad_loss: Any, grad_backprop: Any) -> list[Tensor]:
    """Logits as `_xent_logits_grad`; labels get -log_softmax(logits) * grad_loss (TF v2: labels are
    differentiable), minus the gradient of `backprop` = softmax - labels when it has one (TF leaves that out)."""
    labels_grad = array.expand_dims(_dense(grad_loss), -1) * -log_softmax_op(op.inputs[0])
    if grad_backprop is not None and not _is_zeros(_dense(grad_backprop)):
        labels_grad = labels_grad - _dense(grad_backprop)
    return [_xent_logits_grad(op, grad_loss, grad_backprop), unbroadcast(labels_grad, op.inputs[1])]


def _sparse_xent_shape(b: BuildContext) -> list[TensorShape]:
    features, labels = b.shape(0), b.shape(1)
    if features.ndims is not None and features.ndims != 2:
        raise b.error(f"Shape must be rank 2 but is rank {features.ndims} (logits {features})")
    if labels.ndims is not None and labels.ndims != 1:
        raise b.error(f"Shape must be rank 1 but is rank {labels.ndims} (labels {labels})")
    batch = features[0] if features.ndims is not None else None
    if labels.ndims is not None and batch is not None:
        if not batch.is_compatible_with(labels[0]):
            raise b.error(f"logits and labels must have the same first dimension, got logits shape {features} "
                          f"and labels shape {labels}")
        batch = batch.merge_with(labels[0])
    classes = features[1] if features.ndims is not None else None
    return [TensorShape([batch]), TensorShape([batch, classes])]


@op("SparseSoftmaxCrossEntropyWithLogits", inputs="features: T, labels: Tlabels",
    outputs="loss: T, backprop: T", types={"T": FLOAT, "Tlabels": (dtypes.int32, dtypes.int64)},
    type_defaults={"Tlabels": dtypes.int64}, shape=_sparse_xent_shape)
def sparse_softmax_cross_entropy_with_logits_op(k, features, labels):
    features, labels = _wide(features), np.asarray(labels)
    if features.ndim != 2 or labels.ndim != 1 or features.shape[0] != labels.shape[0]:
        raise ValueError(f"SparseSoftmaxCrossEntropyWithLogits '{k.name}': logits must be 2-D and labels 1-D "
                         f"with the same first dimension, got logits shape {list(features.shape)} and labels "
                         f"shape {list(labels.shape)}")
    classes = features.shape[1]
    bad = (labels < 0) | (labels >= classes)
    if bad.any():
        values = " ".join(str(int(v)) for v in labels[:10])
        raise ValueError(f"SparseSoftmaxCrossEntropyWithLogits '{k.name}': Received a label value of "
                         f"{int(labels[bad][0])} which is outside the valid range of [0, {classes}).  Label "
                         f"values: {values}")
    shifted, log_sum = _softmax_rows(features)
    rows = np.arange(labels.shape[0])
    loss = log_sum[:, 0] - shifted[rows, labels]
    backprop = np.exp(shifted - log_sum)
    backprop[rows, labels] -= 1.0
    out = k.out_dtypes[0]
    return loss.astype(out, copy=False), backprop.astype(out, copy=False)


@sparse_softmax_cross_entropy_with_logits_op.gradient
def _sparse_softmax_cross_entropy_with_logits_grad(op: Operation, grad_loss: Any, grad_backprop: Any) -> list[Any]:
    return [_xent_logits_grad(op, grad_loss, grad_backprop), None]


def _ensure_xent_args(name: str, sentinel: Any, labels: Any, logits: Any) -> None:
    if sentinel is not None:
        raise ValueError(f"Only call `{name}` with named arguments (labels=..., logits=..., ...), got {sentinel!r}")
    if labels is None or logits is None:
        raise ValueError(f"Both `labels` and `logits` must be provided for {name}. Received: labels={labels!r} "
                         f"and logits={logits!r}")


def _flatten_outer_dims(x: Tensor) -> Tensor:
    """`x` reshaped to [-1, last dimension], the static shape kept where it is known."""
    last = x.shape[-1].value if x.shape.ndims else None
    if last is not None:
        target: Any = np.array([-1, last], np.int32)
    else:
        target = array.concat([constant(np.array([-1], np.int32)), array.shape(x)[-1:]], 0)
    out = array.reshape(x, target)
    if x.shape.ndims is not None:
        dims = x.shape.as_list()
        if all(d is not None for d in dims[:-1]):
            out.set_shape([int(np.prod(dims[:-1], dtype=np.int64)), dims[-1]])
    return out


def _outer_shape(x: Tensor) -> Any:
    """The shape of `x` without its last dimension (a constant where statically known)."""
    if x.shape.ndims is not None and x.shape[:-1].is_fully_defined():
        return np.array(x.shape.as_list()[:-1], np.int32)
    return array.shape(x)[:-1]


def softmax_cross_entropy_with_logits_v2(labels: Any, logits: Any, axis: int | None = None,
                                         name: str | None = None, dim: int | None = None) -> Tensor:
    """`af.nn.softmax_cross_entropy_with_logits_v2`: -sum(labels * log_softmax(logits), axis).

    The op is named like the scope (`softmax_cross_entropy_with_logits`); for logits of rank other
    than 2 they are flattened to 2-D and the loss reshaped back, as TF does.
    """
    axis = _axis_arg(axis, dim)
    with name_scope(name, "softmax_cross_entropy_with_logits", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, name="labels")
        narrow = logits.dtype.base_dtype in (dtypes.float16, dtypes.bfloat16)
        precise = math.cast(logits, dtypes.float32) if narrow else logits
        labels = math.cast(labels, precise.dtype.base_dtype)
        shape = logits.shape
        rank = shape.ndims
        if axis != -1 and not (rank is not None and axis == rank - 1):
            if rank is None:
                raise NotImplementedError("softmax_cross_entropy_with_logits along a non-last axis needs a "
                                          "known rank")
            if not -rank <= axis < rank:
                raise ValueError(f"softmax_cross_entropy_with_logits: axis {axis} is out of range for logits "
                                 f"of rank {rank}")
            axis %= rank
            perm = np.array([d for d in range(rank) if d != axis] + [axis], np.int32)
            precise = array.transpose(precise, perm)
            labels = array.transpose(labels, perm)
        if rank == 2:
            cost, _ = softmax_cross_entropy_with_logits_op(precise, labels, name=scope)
        else:
            output_shape = _outer_shape(precise)
            cost, _ = softmax_cross_entropy_with_logits_op(_flatten_outer_dims(precise),
                                                           _flatten_outer_dims(labels), name=scope)
            cost = array.reshape(cost, output_shape)
            if rank is not None:
                dims = shape.as_list()
                del dims[axis]
                cost.set_shape(dims)
        return math.cast(cost, logits.dtype.base_dtype) if narrow else cost


def softmax_cross_entropy_with_logits(_sentinel: Any = None, labels: Any = None, logits: Any = None,
                                      dim: int = -1, name: str | None = None, axis: int | None = None) -> Tensor:
    """`af.nn.softmax_cross_entropy_with_logits` (TF1's): as `_v2`, with no gradient into `labels`."""
    _ensure_xent_args("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    axis = dim if axis is None else axis
    with name_scope(name, "softmax_cross_entropy_with_logits_sg", [logits, labels]) as scope:
        labels = _op("StopGradient")(labels, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, axis=axis, name=scope)


def sparse_softmax_cross_entropy_with_logits(_sentinel: Any = None, labels: Any = None, logits: Any = None,
                                             name: str | None = None) -> Tensor:
    """`af.nn.sparse_softmax_cross_entropy_with_logits`: -log_softmax(logits)[labels] per row.

    A label outside [0, num_classes) is an InvalidArgumentError when the step runs.
    """
    _ensure_xent_args("sparse_softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    with name_scope(name, "SparseSoftmaxCrossEntropyWithLogits", [labels, logits]):
        labels = convert_to_tensor(labels)
        logits = convert_to_tensor(logits)
        half = logits.dtype.base_dtype == dtypes.float16
        precise = math.cast(logits, dtypes.float32) if half else logits
        labels_shape, logits_shape = labels.shape, logits.shape
        labels_tensor_shape = constant(np.array(labels_shape.as_list(), np.int32), name="Shape") \
            if labels_shape.is_fully_defined() else array.shape(labels)
        if logits_shape.ndims == 0:
            raise ValueError(f"`logits` cannot be a scalar. Received logits={logits!r}")
        if logits_shape.ndims is not None and labels_shape.ndims is not None and \
                labels_shape.ndims != logits_shape.ndims - 1:
            raise ValueError(f"`labels.shape.rank` must equal `logits.shape.rank - 1`. Received: labels.shape="
                             f"{labels_shape} of rank {labels_shape.ndims} and logits.shape={logits_shape} of "
                             f"rank {logits_shape.ndims}")
        if labels_shape.is_fully_defined() and logits_shape.ndims is not None and \
                logits_shape[:-1].is_fully_defined() and labels_shape.as_list() != logits_shape.as_list()[:-1]:
            raise ValueError(f"`labels.shape` must equal `logits.shape` except for the last dimension. Received: "
                             f"labels.shape={labels_shape} and logits.shape={logits_shape}")
        if logits_shape.ndims == 2:
            cost, _ = sparse_softmax_cross_entropy_with_logits_op(precise, labels, name=name)
        else:
            cost, _ = sparse_softmax_cross_entropy_with_logits_op(
                _flatten_outer_dims(precise), array.reshape(labels, np.array([-1], np.int32)),
                name=name)
            cost = array.reshape(cost, labels_tensor_shape)
            cost.set_shape(labels_shape)
        return math.cast(cost, dtypes.float16) if half else cost


def sigmoid_cross_entropy_with_logits(_sentinel: Any = None, labels: Any = None, logits: Any = None,
                                      name: str | None = None) -> Tensor:
    """`af.nn.sigmoid_cross_entropy_with_logits`: max(x, 0) - x * z + log(1 + exp(-|x|)), TF's stable form."""
    _ensure_xent_args("sigmoid_cross_entropy_with_logits", _sentinel, labels, logits)
    with name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, name="labels")
        if not labels.shape.is_compatible_with(logits.shape):
            raise ValueError(f"`logits` and `labels` must have the same shape, received ({logits.shape} vs "
                             f"{labels.shape}).")
        zeros = array.zeros_like(logits, dtype=logits.dtype.base_dtype)
        cond = logits >= zeros
        relu_logits = _op("Select")(cond, logits, zeros)
        neg_abs_logits = _op("Select")(cond, -logits, logits)
        return math.add(relu_logits - logits * labels, _op("Log1p")(_op("Exp")(neg_abs_logits)), name=scope)


__all__ = [
    "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
    "sparse_softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits",
]
