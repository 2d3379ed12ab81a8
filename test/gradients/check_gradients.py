#!/usr/bin/env python3
"""Finite-difference check of weft's gradient rules, end to end.

Each case is a tiny ONNX graph whose float initializers are the parameters,
with the scalar loss ReduceSum(y * R) for a fixed random R (a frozen
initializer). Cases are compiled in groups into one model (the loss is the
sum of the cases' losses, so each parameter's gradient is its own case's)
with `weftc compile --emit-gradients --freeze '*frozen*'`, run with
`weft run`, and every gradient is compared with central finite differences
(eps 1e-6) of a float64 PyTorch implementation of the same forward:
||grad - fd|| / ||fd|| <= 1e-3 per tensor. The few cases built on ties
(equal maxima, where the loss has a kink) compare with PyTorch's autograd
instead, which fixes how ties share the gradient. A group that fails to compile or
run is retried case by case, so a failure names its case.

Run with Debian's /usr/bin/python3 (numpy, onnx, torch) and weftc / weft on
PATH or $WEFT_BIN_DIR:

    check_gradients.py [--filter REGEX] [--work-dir DIR] [--verbose] [--list]

Prints one line per case and 'gradients: N passed, M failed'; exits 1 when a
case fails.
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import sys
import tempfile

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import weft_tools  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import coverage_cases  # noqa: E402
import image_cases  # noqa: E402
import import_op_cases  # noqa: E402
import recurrent_cases  # noqa: E402

OPSET = 17
EPS = 1e-6
TOLERANCE = 1e-3
FREEZE_GLOB = "*frozen*"

torch.set_default_dtype(torch.float64)
RNG = np.random.RandomState(20261121)


def rand(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, size=shape).astype(np.float32)


def positive(*shape, low=0.5, high=2.0):
    return rand(*shape, low=low, high=high)


def nonzero(*shape, margin=0.25):
    """Values with |x| >= margin: away from the kinks of relu, abs, max."""
    x = rand(*shape)
    return (np.sign(x) * (np.abs(x) + margin)).astype(np.float32)


def distinct(*shape):
    """A permutation of well separated values: no ties for max and pooling."""
    n = int(np.prod(shape))
    return (RNG.permutation(n).astype(np.float32) / n * 4 - 2).reshape(shape)


def i64(values):
    return np.array(values, dtype=np.int64)


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs if isinstance(outputs, list) else [outputs], **attrs)


class Case:
    """params: trainable float initializers; consts: other initializers (int
    constants; float ones must be named 'frozen.*'); nodes compute 'y' from
    them; forward(env) computes 'y' in PyTorch from float64 tensors."""

    def __init__(self, name, params, nodes, forward, consts=None, group=None, ties=False,
                 opset=OPSET):
        self.name = name
        # A group's model takes its cases' highest opset (ops of opsets 18
        # to 21 go in groups of their own: opset 18 moved ReduceMean's axes).
        self.opset = opset
        # At ties (equal maxima) the loss has a kink and finite differences
        # mean nothing; such cases compare with PyTorch's autograd instead,
        # which fixes how ties share the gradient.
        self.ties = ties
        self.params = params
        self.consts = consts or {}
        self.nodes = nodes
        self.forward = forward
        self.group = group
        for cname, value in self.consts.items():
            if value.dtype.kind == "f" and not cname.startswith("frozen."):
                raise ValueError("%s: float constant '%s' must be named frozen.*" % (name, cname))
        y = self.forward(self.env(self.params))
        self.r = rand(*y.shape)

    def env(self, params):
        """name -> torch tensor: floats in float64, the rest as they are."""
        out = {}
        for name, value in list(self.consts.items()) + list(params.items()):
            value = np.asarray(value)
            out[name] = torch.tensor(value.astype(np.float64) if value.dtype.kind == "f" else value)
        return out

    def loss(self, params):
        with torch.no_grad():
            y = self.forward(self.env(params))
            return float((y * torch.tensor(self.r.astype(np.float64))).sum())

    def reference_gradients(self):
        if not self.ties:
            return self.finite_differences()
        env = self.env(self.params)
        leaves = [env[n].requires_grad_() for n in self.params]
        loss = (self.forward(env) * torch.tensor(self.r.astype(np.float64))).sum()
        grads = torch.autograd.grad(loss, leaves)
        return {n: g.detach().numpy() for n, g in zip(self.params, grads)}

    def finite_differences(self):
        """Central differences of the float64 loss at the float32 point."""
        point = {n: v.astype(np.float64) for n, v in self.params.items()}
        grads = {}
        for name, value in point.items():
            grad = np.zeros(value.shape)
            flat = value.reshape(-1)
            for i in range(flat.size):
                keep = flat[i]
                flat[i] = keep + EPS
                up = self.loss(point)
                flat[i] = keep - EPS
                down = self.loss(point)
                flat[i] = keep
                grad.reshape(-1)[i] = (up - down) / (2 * EPS)
            grads[name] = grad
        return grads


#===------------------------------------------------------------------------===#
# The cases
#===------------------------------------------------------------------------===#

CASES = []


def case(name, params, nodes, forward, consts=None, group=None, ties=False, opset=OPSET):
    CASES.append(Case(name, params, nodes, forward, consts, group, ties, opset))


def slice_indices(dim, start, end, step):
    return list(range(*slice(start, end, step).indices(dim)))


def torch_slice(x, starts, ends, axes, steps):
    for start, end, axis, step in zip(starts, ends, axes, steps):
        idx = slice_indices(x.shape[axis], start, end, step)
        x = x.index_select(axis, torch.tensor(idx, dtype=torch.int64))
    return x


def torch_gather(data, indices, axis):
    dim = data.shape[axis]
    flat = torch.tensor(np.asarray(indices).reshape(-1) % dim, dtype=torch.int64)
    picked = data.index_select(axis, flat)
    shape = list(data.shape[:axis]) + list(np.asarray(indices).shape) + list(data.shape[axis + 1:])
    return picked.reshape(shape)


def define_elementwise():
    g = "elementwise"
    unary = [
        ("neg", "Neg", rand(2, 3), torch.neg),
        ("sqrt", "Sqrt", positive(2, 3), torch.sqrt),
        ("exp", "Exp", rand(2, 3), torch.exp),
        ("log", "Log", positive(2, 3), torch.log),
        ("tanh", "Tanh", rand(2, 3), torch.tanh),
        ("erf", "Erf", rand(2, 3), torch.erf),
        ("relu", "Relu", nonzero(2, 3), torch.relu),
        ("sigmoid", "Sigmoid", rand(2, 3, low=-3, high=3), torch.sigmoid),
    ]
    for name, op, x, fn in unary:
        case(name, {"x": x}, [node(op, ["x"], "y")], lambda e, fn=fn: fn(e["x"]), group=g)

    binary = [
        ("add_broadcast", "Add", rand(2, 3, 4), rand(3, 1), torch.add),
        ("add_scalar", "Add", rand(3), rand(), torch.add),
        ("sub_broadcast", "Sub", rand(4), rand(2, 3, 4), torch.sub),
        ("mul_broadcast", "Mul", rand(2, 1, 4), rand(3, 1), torch.mul),
        ("div_broadcast", "Div", rand(2, 3), nonzero(3, margin=0.5), torch.div),
        ("pow_both", "Pow", positive(2, 3), rand(2, 3, low=-1, high=2), torch.pow),
        ("pow_broadcast_exponent", "Pow", positive(2, 3), rand(1, 3, low=-1, high=2), torch.pow),
        ("max_broadcast", "Max", distinct(2, 3), distinct(3), torch.maximum),
        ("min_broadcast", "Min", distinct(3, 1), distinct(2, 3, 4), torch.minimum),
    ]
    for name, op, a, b, fn in binary:
        case(name, {"a": a, "b": b}, [node(op, ["a", "b"], "y")],
             lambda e, fn=fn: fn(e["a"], e["b"]), group=g)

    # A constant exponent: only the base is differentiated (the exponent's
    # log(base) for negative bases is never computed into a result).
    case("pow_constant_exponent", {"a": rand(2, 3)}, [node("Pow", ["a", "frozen.e"], "y")],
         lambda e: torch.pow(e["a"], e["frozen.e"]), consts={"frozen.e": np.array(3.0, np.float32)},
         group=g)
    # The same parameter on both sides: both contributions add up.
    case("mul_self", {"a": rand(3, 2)}, [node("Mul", ["a", "a"], "y")], lambda e: e["a"] * e["a"], group=g)

    cond = RNG.rand(2, 3) > 0.5
    case("where_constant_condition", {"x": rand(2, 3), "y_": rand(3)},
         [node("Where", ["cond", "x", "y_"], "y")],
         lambda e: torch.where(e["cond"], e["x"], e["y_"]), consts={"cond": cond}, group=g)
    # The condition computed from a parameter: no gradient flows through it.
    case("where_computed_condition", {"x": nonzero(2, 3), "z": rand(1, 3)},
         [node("Greater", ["x", "frozen.zero"], "c"), node("Where", ["c", "x", "z"], "y")],
         lambda e: torch.where(e["x"] > 0, e["x"], e["z"]),
         consts={"frozen.zero": np.array(0.0, np.float32)}, group=g)
    case("max_min_ties_share", {"a": np.array([1, 2, 3, 4], np.float32), "b": np.array([1, 0, 3, 5], np.float32)},
         [node("Max", ["a", "b"], "m"), node("Min", ["a", "b"], "n"), node("Concat", ["m", "n"], "y", axis=0)],
         lambda e: torch.cat([torch.maximum(e["a"], e["b"]), torch.minimum(e["a"], e["b"])]), group=g,
         ties=True)
    case("cast_f64_roundtrip", {"x": rand(2, 3)},
         [node("Cast", ["x"], "d", to=TensorProto.DOUBLE), node("Mul", ["d", "d"], "s"),
          node("Cast", ["s"], "y", to=TensorProto.FLOAT)],
         lambda e: e["x"] * e["x"], group=g)


def define_linalg():
    g = "linalg"
    case("matmul", {"a": rand(3, 4), "b": rand(4, 5)}, [node("MatMul", ["a", "b"], "y")],
         lambda e: e["a"] @ e["b"], group=g)
    case("matmul_batch_broadcast", {"a": rand(2, 1, 3, 4), "b": rand(3, 4, 5)},
         [node("MatMul", ["a", "b"], "y")], lambda e: torch.matmul(e["a"], e["b"]), group=g)
    case("matmul_both_batches_broadcast", {"a": rand(2, 1, 2, 3), "b": rand(1, 3, 3, 2)},
         [node("MatMul", ["a", "b"], "y")], lambda e: torch.matmul(e["a"], e["b"]), group=g)
    case("matmul_vector_lhs", {"a": rand(4), "b": rand(2, 4, 3)}, [node("MatMul", ["a", "b"], "y")],
         lambda e: torch.matmul(e["a"], e["b"]), group=g)
    case("matmul_vector_rhs", {"a": rand(3, 4), "b": rand(4)}, [node("MatMul", ["a", "b"], "y")],
         lambda e: torch.matmul(e["a"], e["b"]), group=g)
    # A transpose of the last two dims folds into the matmul's flags.
    case("matmul_transposed_operands", {"a": rand(2, 4, 3), "b": rand(2, 5, 4)},
         [node("Transpose", ["a"], "at", perm=[0, 2, 1]), node("Transpose", ["b"], "bt", perm=[0, 2, 1]),
          node("MatMul", ["at", "bt"], "y")],
         lambda e: e["a"].transpose(1, 2) @ e["b"].transpose(1, 2), group=g)
    for ta in (0, 1):
        for tb in (0, 1):
            a = rand(4, 3) if ta else rand(3, 4)
            b = rand(5, 4) if tb else rand(4, 5)

            def gemm(e, ta=ta, tb=tb):
                a_ = e["a"].t() if ta else e["a"]
                b_ = e["b"].t() if tb else e["b"]
                return 0.7 * (a_ @ b_) + 1.3 * e["c"]
            case("gemm_transA%d_transB%d" % (ta, tb), {"a": a, "b": b, "c": rand(5)},
                 [node("Gemm", ["a", "b", "c"], "y", transA=ta, transB=tb, alpha=0.7, beta=1.3)],
                 gemm, group=g)
    case("gemm_bias_column", {"a": rand(3, 4), "b": rand(4, 5), "c": rand(3, 1)},
         [node("Gemm", ["a", "b", "c"], "y")], lambda e: e["a"] @ e["b"] + e["c"], group=g)


def define_conv_pool():
    g = "conv_pool"
    case("conv2d_bias_pad", {"x": rand(2, 3, 5, 5), "w": rand(4, 3, 3, 3), "b": rand(4)},
         [node("Conv", ["x", "w", "b"], "y", pads=[1, 1, 1, 1])],
         lambda e: F.conv2d(e["x"], e["w"], e["b"], padding=1), group=g)

    def conv_general(e):
        x = F.pad(e["x"], (0, 2, 1, 0))  # pads [top=1, left=0, bottom=0, right=2]
        return F.conv2d(x, e["w"], e["b"], stride=(2, 1), dilation=(2, 1), groups=2)
    case("conv2d_group_stride_dilation_asymmetric_pads",
         {"x": rand(1, 4, 7, 6), "w": rand(6, 2, 3, 2), "b": rand(6)},
         [node("Conv", ["x", "w", "b"], "y", group=2, strides=[2, 1], dilations=[2, 1], pads=[1, 0, 0, 2])],
         conv_general, group=g)
    case("conv1d_stride", {"x": rand(2, 2, 9), "w": rand(3, 2, 3)},
         [node("Conv", ["x", "w"], "y", strides=[2], pads=[1, 1])],
         lambda e: F.conv1d(e["x"], e["w"], stride=2, padding=1), group=g)
    case("conv2d_depthwise", {"x": rand(1, 3, 4, 4), "w": rand(3, 1, 2, 2)},
         [node("Conv", ["x", "w"], "y", group=3)],
         lambda e: F.conv2d(e["x"], e["w"], groups=3), group=g)

    case("conv3d_stride_pad", {"x": rand(1, 2, 4, 5, 4), "w": rand(2, 2, 2, 3, 2), "b": rand(2)},
         [node("Conv", ["x", "w", "b"], "y", strides=[1, 2, 2], pads=[0, 1, 1, 1, 0, 1])],
         lambda e: F.conv3d(F.pad(e["x"], (1, 1, 1, 0, 0, 1)), e["w"], e["b"], stride=(1, 2, 2)),
         group=g)
    case("max_pool_pad_stride", {"x": distinct(1, 2, 7, 7)},
         [node("MaxPool", ["x"], "y", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])],
         lambda e: F.max_pool2d(e["x"], 3, 2, 1), group=g)
    case("max_pool_ceil_dilation", {"x": distinct(1, 2, 8, 8)},
         [node("MaxPool", ["x"], "y", kernel_shape=[2, 2], strides=[2, 2], dilations=[2, 2],
               ceil_mode=1)],
         lambda e: F.max_pool2d(e["x"], 2, 2, 0, dilation=2, ceil_mode=True), group=g)
    case("max_pool_overlapping_1d", {"x": distinct(2, 1, 9)},
         [node("MaxPool", ["x"], "y", kernel_shape=[3], strides=[1])],
         lambda e: F.max_pool1d(e["x"], 3, 1), group=g)
    case("max_pool3d", {"x": distinct(1, 1, 4, 4, 4)},
         [node("MaxPool", ["x"], "y", kernel_shape=[2, 2, 2], strides=[2, 1, 2])],
         lambda e: F.max_pool3d(e["x"], 2, (2, 1, 2)), group=g)
    case("max_pool_ties_first", {"x": np.tile(np.array([1, 1, 0, 2, 2, 2], np.float32), (1, 1, 2, 1))},
         [node("MaxPool", ["x"], "y", kernel_shape=[2, 3], strides=[1, 1], pads=[0, 1, 0, 1])],
         lambda e: F.max_pool2d(e["x"], (2, 3), 1, (0, 1)), group=g, ties=True)
    case("avg_pool_1d", {"x": rand(2, 3, 7)},
         [node("AveragePool", ["x"], "y", kernel_shape=[3], strides=[2])],
         lambda e: F.avg_pool1d(e["x"], 3, 2), group=g)
    case("avg_pool_pad_include", {"x": rand(1, 2, 5, 5)},
         [node("AveragePool", ["x"], "y", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
               count_include_pad=1)],
         lambda e: F.avg_pool2d(e["x"], 3, 2, 1, count_include_pad=True), group=g)
    case("avg_pool_pad_exclude_ceil", {"x": rand(1, 2, 6, 6)},
         [node("AveragePool", ["x"], "y", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
               ceil_mode=1)],
         lambda e: F.avg_pool2d(e["x"], 3, 2, 1, ceil_mode=True, count_include_pad=False), group=g)
    case("global_average_pool", {"x": rand(2, 3, 3, 4)}, [node("GlobalAveragePool", ["x"], "y")],
         lambda e: e["x"].mean(dim=(2, 3), keepdim=True), group=g)
    case("global_max_pool", {"x": distinct(2, 3, 3, 4)}, [node("GlobalMaxPool", ["x"], "y")],
         lambda e: e["x"].amax(dim=(2, 3), keepdim=True), group=g)


def define_norm_loss():
    g = "norm_loss"
    case("batch_norm_nchw", {"x": rand(2, 3, 4, 4), "scale": rand(3), "bias": rand(3)},
         [node("BatchNormalization", ["x", "scale", "bias", "frozen.mean", "frozen.var"], "y",
               epsilon=1e-3)],
         lambda e: F.batch_norm(e["x"], e["frozen.mean"], e["frozen.var"], e["scale"], e["bias"],
                                training=False, eps=1e-3),
         consts={"frozen.mean": rand(3), "frozen.var": positive(3)}, group=g)
    case("batch_norm_rank2", {"x": rand(4, 3), "scale": rand(3), "bias": rand(3)},
         [node("BatchNormalization", ["x", "scale", "bias", "frozen.mean", "frozen.var"], "y")],
         lambda e: F.batch_norm(e["x"], e["frozen.mean"], e["frozen.var"], e["scale"], e["bias"],
                                training=False, eps=1e-5),
         consts={"frozen.mean": rand(3), "frozen.var": positive(3)}, group=g)
    case("layer_norm_last_axis_bias", {"x": rand(2, 3, 8), "scale": rand(8), "bias": rand(8)},
         [node("LayerNormalization", ["x", "scale", "bias"], "y", axis=-1, epsilon=1e-5)],
         lambda e: F.layer_norm(e["x"], (8,), e["scale"], e["bias"], 1e-5), group=g)
    case("layer_norm_axis1_no_bias", {"x": rand(2, 3, 4), "scale": rand(3, 4)},
         [node("LayerNormalization", ["x", "scale"], "y", axis=1, epsilon=1e-4)],
         lambda e: F.layer_norm(e["x"], (3, 4), e["scale"], None, 1e-4), group=g)
    case("softmax_last_axis", {"x": rand(2, 3, 4, low=-2, high=2)}, [node("Softmax", ["x"], "y")],
         lambda e: torch.softmax(e["x"], -1), group=g)
    case("softmax_axis1", {"x": rand(2, 3, 4, low=-2, high=2)}, [node("Softmax", ["x"], "y", axis=1)],
         lambda e: torch.softmax(e["x"], 1), group=g)
    case("log_softmax_axis0", {"x": rand(3, 4, low=-2, high=2)}, [node("LogSoftmax", ["x"], "y", axis=0)],
         lambda e: torch.log_softmax(e["x"], 0), group=g)

    labels = i64([1, 0, 3, 2, 3])
    for reduction in ("mean", "sum", "none"):
        case("cross_entropy_%s" % reduction, {"s": rand(5, 4, low=-2, high=2)},
             [node("SoftmaxCrossEntropyLoss", ["s", "labels"], "y", reduction=reduction)],
             lambda e, r=reduction: F.cross_entropy(e["s"], e["labels"], reduction=r),
             consts={"labels": labels}, group=g)
    case("cross_entropy_ignore_index_weights", {"s": rand(5, 4, low=-2, high=2)},
         [node("SoftmaxCrossEntropyLoss", ["s", "labels", "frozen.w"], "y", ignore_index=3)],
         lambda e: F.cross_entropy(e["s"], e["labels"], weight=e["frozen.w"], ignore_index=3),
         consts={"labels": labels, "frozen.w": positive(4)}, group=g)
    case("cross_entropy_kdim_sum_ignore", {"s": rand(2, 3, 4, low=-2, high=2)},
         [node("SoftmaxCrossEntropyLoss", ["s", "labels"], "y", reduction="sum", ignore_index=0)],
         lambda e: F.cross_entropy(e["s"], e["labels"], ignore_index=0, reduction="sum"),
         consts={"labels": i64([[0, 1, 2, 2], [1, 0, 0, 2]])}, group=g)
    # The loss of a model that ends in the loss op: d loss = 1 seeds it.
    case("cross_entropy_weights_none", {"s": rand(3, 4, low=-2, high=2)},
         [node("SoftmaxCrossEntropyLoss", ["s", "labels", "frozen.w"], "y", reduction="none")],
         lambda e: F.cross_entropy(e["s"], e["labels"], weight=e["frozen.w"], reduction="none"),
         consts={"labels": i64([2, 0, 1]), "frozen.w": positive(4)}, group=g)


def define_reduce_movement():
    g = "reduce_movement"
    case("reduce_sum_axis1", {"x": rand(2, 3, 4)},
         [node("ReduceSum", ["x", "axes"], "y", keepdims=0)],
         lambda e: e["x"].sum(1), consts={"axes": i64([1])}, group=g)
    case("reduce_mean_axes02_keepdims", {"x": rand(2, 3, 4)},
         [node("ReduceMean", ["x"], "y", axes=[0, 2], keepdims=1)],
         lambda e: e["x"].mean(dim=(0, 2), keepdim=True), group=g)
    case("reduce_max_axis1", {"x": distinct(3, 4, 2)}, [node("ReduceMax", ["x"], "y", axes=[1], keepdims=0)],
         lambda e: e["x"].amax(1), group=g)
    case("reduce_max_all", {"x": distinct(3, 4)}, [node("ReduceMax", ["x"], "y", keepdims=0)],
         lambda e: e["x"].amax(), group=g)

    ties = np.array([[3, 1, 3, 0], [2, 2, 1, 2], [0, 1, 1, 1]], np.float32)
    case("reduce_max_ties_share", {"x": ties}, [node("ReduceMax", ["x"], "y", axes=[1], keepdims=1)],
         lambda e: e["x"].amax(1, keepdim=True), group=g, ties=True)

    case("reshape_flatten_squeeze_unsqueeze", {"x": rand(2, 3, 4)},
         [node("Reshape", ["x", "shape"], "r"), node("Flatten", ["r"], "f", axis=1),
          node("Unsqueeze", ["f", "ax0"], "u"), node("Squeeze", ["u", "ax0"], "s"),
          node("Tanh", ["s"], "y")],
         lambda e: torch.tanh(e["x"].reshape(4, 3, 2).reshape(4, 6)),
         consts={"shape": i64([4, -1, 2]), "ax0": i64([0])}, group=g)
    case("transpose", {"x": rand(2, 3, 4)}, [node("Transpose", ["x"], "y", perm=[2, 0, 1])],
         lambda e: e["x"].permute(2, 0, 1), group=g)
    case("concat_repeated_input", {"a": rand(2, 1, 3), "b": rand(2, 2, 3)},
         [node("Concat", ["a", "b", "a"], "y", axis=1)],
         lambda e: torch.cat([e["a"], e["b"], e["a"]], 1), group=g)
    case("split_all_used", {"x": rand(2, 5)},
         [node("Split", ["x", "sizes"], ["p0", "p1"], axis=1),
          node("Slice", ["p1", "st", "en", "axs"], "p1_"), node("Mul", ["p0", "p1_"], "m"),
          node("Concat", ["m", "p1"], "y", axis=1)],
         lambda e: torch.cat([e["x"][:, :2] * e["x"][:, 2:4], e["x"][:, 2:]], 1),
         consts={"sizes": i64([2, 3]), "st": i64([0]), "en": i64([2]), "axs": i64([1])}, group=g)
    case("split_piece_unused", {"x": rand(6, 2)},
         [node("Split", ["x", "sizes"], ["p0", "p1", "p2"], axis=0), node("Concat", ["p2", "p0"], "y", axis=0)],
         lambda e: torch.cat([e["x"][3:], e["x"][:1]], 0), consts={"sizes": i64([1, 2, 3])}, group=g)
    case("slice_steps", {"x": rand(5, 6)},
         [node("Slice", ["x", "starts", "ends", "axes", "steps"], "y")],
         lambda e: torch_slice(e["x"], [1, -1], [5, -7], [0, 1], [2, -2]),
         consts={"starts": i64([1, -1]), "ends": i64([5, -7]), "axes": i64([0, 1]), "steps": i64([2, -2])},
         group=g)
    case("slice_window", {"x": rand(3, 7)},
         [node("Slice", ["x", "starts", "ends", "axes"], "y")],
         lambda e: e["x"][:, 2:5], consts={"starts": i64([2]), "ends": i64([5]), "axes": i64([1])}, group=g)
    idx = i64([[0, -1], [2, 0], [4, 0]])
    case("gather_embedding_negative_repeated", {"table": rand(5, 3)},
         [node("Gather", ["table", "idx"], "y", axis=0)],
         lambda e: torch_gather(e["table"], idx, 0), consts={"idx": idx}, group=g)
    idx1 = i64([3, -4, 3])
    case("gather_axis1_i32", {"data": rand(2, 4, 3)},
         [node("Gather", ["data", "idx"], "y", axis=1)],
         lambda e: torch_gather(e["data"], idx1, 1), consts={"idx": idx1.astype(np.int32)}, group=g)
    case("expand", {"x": rand(3, 1)}, [node("Expand", ["x", "shape"], "y")],
         lambda e: torch.broadcast_to(e["x"], (2, 3, 4)), consts={"shape": i64([2, 3, 4])}, group=g)
    case("trilu_upper_k1", {"x": rand(2, 4, 5)}, [node("Trilu", ["x", "k"], "y", upper=1)],
         lambda e: torch.triu(e["x"], 1), consts={"k": np.array(1, np.int64)}, group=g)
    case("trilu_lower_km1", {"x": rand(4, 4)}, [node("Trilu", ["x", "k"], "y", upper=0)],
         lambda e: torch.tril(e["x"], -1), consts={"k": np.array(-1, np.int64)}, group=g)


def define_composites():
    g = "composite"
    # A weight used twice (tied, like torch's merged initializers) and an
    # activation used three times.
    case("tied_weight_multi_use", {"x": rand(2, 3), "w": rand(3, 4)},
         [node("MatMul", ["x", "w"], "h0"), node("Tanh", ["h0"], "h"), node("Mul", ["h", "h"], "hh"),
          node("Add", ["hh", "h"], "s"), node("Transpose", ["w"], "wt", perm=[1, 0]),
          node("MatMul", ["s", "wt"], "y")],
         lambda e: (lambda h: (h * h + h) @ e["w"].t())(torch.tanh(e["x"] @ e["w"])), group=g)

    def attention(e):
        q, k, v = e["x"] @ e["wq"], e["x"] @ e["wk"], e["x"] @ e["wv"]
        s = q @ k.transpose(-1, -2) * 0.5
        s = torch.where(torch.tensor(np.triu(np.ones((3, 3), bool), 1)), torch.tensor(-1e4), s)
        return torch.softmax(s, -1) @ v
    case("causal_attention", {"x": rand(2, 3, 4), "wq": rand(4, 4), "wk": rand(4, 4), "wv": rand(4, 4)},
         [node("MatMul", ["x", "wq"], "q"), node("MatMul", ["x", "wk"], "k"), node("MatMul", ["x", "wv"], "v"),
          node("Transpose", ["k"], "kt", perm=[0, 2, 1]), node("MatMul", ["q", "kt"], "s0"),
          node("Mul", ["s0", "frozen.scale"], "s1"),
          node("Where", ["mask", "frozen.neg", "s1"], "s2"), node("Softmax", ["s2"], "p"),
          node("MatMul", ["p", "v"], "y")],
         attention,
         consts={"frozen.scale": np.array(0.5, np.float32), "frozen.neg": np.array(-1e4, np.float32),
                 "mask": np.triu(np.ones((3, 3), bool), 1)}, group=g)

    def gelu_mlp(e):
        h = e["x"] @ e["w1"] + e["b1"]
        h = 0.5 * h * (1 + torch.erf(h / np.sqrt(2.0)))
        return F.layer_norm(h @ e["w2"], (3,), e["g"], e["beta"], 1e-5)
    case("gelu_mlp_layer_norm",
         {"x": rand(4, 3), "w1": rand(3, 5), "b1": rand(5), "w2": rand(5, 3), "g": rand(3), "beta": rand(3)},
         [node("MatMul", ["x", "w1"], "h0"), node("Add", ["h0", "b1"], "h1"),
          node("Div", ["h1", "frozen.sqrt2"], "h2"), node("Erf", ["h2"], "h3"),
          node("Add", ["h3", "frozen.one"], "h4"), node("Mul", ["h1", "h4"], "h5"),
          node("Mul", ["h5", "frozen.half"], "h6"), node("MatMul", ["h6", "w2"], "o"),
          node("LayerNormalization", ["o", "g", "beta"], "y")],
         gelu_mlp,
         consts={"frozen.sqrt2": np.array(np.sqrt(2.0), np.float32), "frozen.one": np.array(1.0, np.float32),
                 "frozen.half": np.array(0.5, np.float32)}, group=g)

    def conv_net(e):
        h = torch.relu(F.conv2d(e["x"], e["w"], e["b"], padding=1))
        h = F.max_pool2d(h, 2, 2)
        return F.log_softmax(h.reshape(2, -1) @ e["fc"], 1)
    case("conv_relu_pool_fc", {"x": rand(2, 1, 4, 4), "w": rand(2, 1, 3, 3), "b": rand(2), "fc": rand(8, 3)},
         [node("Conv", ["x", "w", "b"], "c", pads=[1, 1, 1, 1]), node("Relu", ["c"], "r"),
          node("MaxPool", ["r"], "p", kernel_shape=[2, 2], strides=[2, 2]),
          node("Flatten", ["p"], "f"), node("MatMul", ["f", "fc"], "l"),
          node("LogSoftmax", ["l"], "y", axis=1)],
         conv_net, group=g)


def define_import_composites():
    """ONNX ops the importer builds from other weft ops (ImportActivations,
    ImportPad, ImportEinsum)."""
    g = "import"
    unary = [
        ("sin", "Sin", rand(2, 3, low=-3, high=3), {}, torch.sin),
        ("cos", "Cos", rand(2, 3, low=-3, high=3), {}, torch.cos),
        ("reciprocal", "Reciprocal", nonzero(2, 3, margin=0.5), {}, torch.reciprocal),
        ("abs", "Abs", nonzero(2, 3), {}, torch.abs),
        ("hardsigmoid", "HardSigmoid", rand(3, 4, low=-4, high=4), {"alpha": 0.3, "beta": 0.4},
         lambda x: torch.clamp(0.3 * x + 0.4, 0, 1)),
        ("hardswish", "HardSwish", rand(3, 4, low=-4, high=4), {}, F.hardswish),
        ("leakyrelu", "LeakyRelu", nonzero(2, 3), {"alpha": 0.1}, lambda x: F.leaky_relu(x, 0.1)),
        ("elu", "Elu", nonzero(3, 4, margin=0.1) * 2, {"alpha": 0.7}, lambda x: F.elu(x, 0.7)),
        ("selu", "Selu", nonzero(3, 4, margin=0.1) * 2, {}, F.selu),
        ("softplus", "Softplus", rand(3, 4, low=-5, high=25), {}, F.softplus),
    ]
    for name, op, x, attrs, fn in unary:
        case(name, {"x": x}, [node(op, ["x"], "y", **attrs)], lambda e, fn=fn: fn(e["x"]), group=g)

    lo, hi = np.array(-0.5, np.float32), np.array(0.7, np.float32)
    case("clip", {"x": rand(3, 4, low=-2, high=2)}, [node("Clip", ["x", "frozen.lo", "frozen.hi"], "y")],
         lambda e: torch.clamp(e["x"], -0.5, 0.7), consts={"frozen.lo": lo, "frozen.hi": hi}, group=g)
    case("clip_max_only", {"x": rand(3, 4, low=-2, high=2)}, [node("Clip", ["x", "", "frozen.hi"], "y")],
         lambda e: torch.clamp(e["x"], max=0.7), consts={"frozen.hi": hi}, group=g)
    case("prelu_broadcast_slope", {"x": nonzero(2, 3, 4), "slope": rand(3, 1)},
         [node("PRelu", ["x", "slope"], "y")],
         lambda e: torch.where(e["x"] > 0, e["x"], e["x"] * e["slope"]), group=g)
    case("sum_broadcast", {"a": rand(2, 3), "b": rand(3), "c": rand(2, 1)},
         [node("Sum", ["a", "b", "c"], "y")], lambda e: e["a"] + e["b"] + e["c"], group=g)
    case("mean_broadcast", {"a": rand(2, 3), "b": rand(3), "c": rand(2, 1)},
         [node("Mean", ["a", "b", "c"], "y")], lambda e: (e["a"] + e["b"] + e["c"]) / 3, group=g)

    einsums = [
        ("einsum_matmul", "ij,jk->ik", [(3, 4), (4, 5)]),
        ("einsum_batched_heads", "bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
        ("einsum_outer", "i,j->ij", [(3,), (4,)]),
        ("einsum_ellipsis_broadcast", "...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
        ("einsum_implicit_output", "ij,jk", [(3, 4), (4, 2)]),
        ("einsum_transpose_sum", "ijk->kj", [(2, 3, 4)]),
        ("einsum_rowwise_dot", "ij,ij->i", [(3, 4), (3, 4)]),
        ("einsum_three_operands", "ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
        ("einsum_summed_free_label", "bij,bjk->bk", [(2, 3, 4), (2, 4, 5)]),
        ("einsum_hadamard", "ij,ij->ij", [(3, 4), (3, 4)]),
        ("einsum_batched_outer", "bi,bj->bji", [(2, 3), (2, 4)]),
    ]
    for name, eq, shapes in einsums:
        params = {"x%d" % i: rand(*shape) for i, shape in enumerate(shapes)}
        names = sorted(params)
        case(name, params, [node("Einsum", names, "y", equation=eq)],
             lambda e, eq=eq, names=names: torch.einsum(eq, *[e[n] for n in names]), group=g)

    case("conv_transpose_stride_pad_outpad", {"x": rand(2, 2, 3, 4), "w": rand(2, 3, 3, 3), "b": rand(3)},
         [node("ConvTranspose", ["x", "w", "b"], "y", strides=[2, 2], pads=[1, 0, 0, 1],
               output_padding=[1, 0])],
         lambda e: F.conv_transpose2d(e["x"], e["w"], e["b"], stride=2, output_padding=(1, 0))[
             :, :, 1:, :-1],
         group=g)
    case("conv_transpose_group_dilation", {"x": rand(1, 4, 3, 3), "w": rand(4, 1, 2, 2)},
         [node("ConvTranspose", ["x", "w"], "y", group=2, dilations=[2, 1])],
         lambda e: F.conv_transpose2d(e["x"], e["w"], groups=2, dilation=(2, 1)), group=g)
    # Resize as PyTorch exports F.interpolate: nearest (asymmetric, floor),
    # bilinear with and without align_corners, to sizes and by scales.
    scales = np.array([1, 1, 2, 1.5], np.float32)
    case("resize_nearest_scales", {"x": rand(1, 2, 3, 4)},
         [node("Resize", ["x", "", "frozen.scales"], "y", mode="nearest",
               coordinate_transformation_mode="asymmetric", nearest_mode="floor")],
         lambda e: F.interpolate(e["x"], scale_factor=(2, 1.5), mode="nearest"),
         consts={"frozen.scales": scales}, group=g)
    case("resize_bilinear_half_pixel", {"x": rand(1, 2, 3, 4)},
         [node("Resize", ["x", "", "", "frozen.sizes"], "y", mode="linear",
               coordinate_transformation_mode="pytorch_half_pixel")],
         lambda e: F.interpolate(e["x"], size=(5, 7), mode="bilinear", align_corners=False),
         consts={"frozen.sizes": i64([1, 2, 5, 7])}, group=g)
    case("resize_bilinear_align_corners", {"x": rand(1, 2, 4, 3)},
         [node("Resize", ["x", "", "", "frozen.sizes"], "y", mode="linear",
               coordinate_transformation_mode="align_corners")],
         lambda e: F.interpolate(e["x"], size=(3, 6), mode="bilinear", align_corners=True),
         consts={"frozen.sizes": i64([1, 2, 3, 6])}, group=g)
    reductions = [
        ("reduce_min", "ReduceMin", distinct(3, 4), lambda x: torch.amin(x, 1, keepdim=True)),
        ("reduce_l2", "ReduceL2", nonzero(3, 4), lambda x: torch.linalg.vector_norm(x, dim=1, keepdim=True)),
        ("reduce_l1", "ReduceL1", nonzero(3, 4), lambda x: x.abs().sum(1, keepdim=True)),
        ("reduce_sum_square", "ReduceSumSquare", rand(3, 4), lambda x: (x * x).sum(1, keepdim=True)),
        ("reduce_log_sum_exp", "ReduceLogSumExp", rand(3, 4, low=-3, high=3),
         lambda x: torch.logsumexp(x, 1, keepdim=True)),
    ]
    for name, op, x, fn in reductions:
        case(name, {"x": x}, [node(op, ["x"], "y", axes=[1])], lambda e, fn=fn: fn(e["x"]), group=g)
    # Rounding has no gradient: only the second factor's reaches x.
    case("floor_ceil_round_times_x", {"x": rand(3, 4, low=-3, high=3)},
         [node("Floor", ["x"], "f"), node("Ceil", ["x"], "c"), node("Round", ["x"], "r"),
          node("Sum", ["f", "c", "r"], "s"), node("Mul", ["s", "x"], "y")],
         lambda e: (torch.floor(e["x"]) + torch.ceil(e["x"]) + torch.round(e["x"])) * e["x"], group=g)
    case("softsign", {"x": nonzero(2, 3)}, [node("Softsign", ["x"], "y")], lambda e: F.softsign(e["x"]),
         group=g)
    case("tile", {"x": rand(2, 3)}, [node("Tile", ["x", "frozen.reps"], "y")],
         lambda e: e["x"].tile(2, 3), consts={"frozen.reps": i64([2, 3])}, group=g)
    case("instance_norm", {"x": rand(2, 3, 4, 5), "s": rand(3), "b": rand(3)},
         [node("InstanceNormalization", ["x", "s", "b"], "y", epsilon=1e-5)],
         lambda e: F.instance_norm(e["x"], weight=e["s"], bias=e["b"], eps=1e-5), group=g)
    case("pad_constant_crop", {"x": rand(3, 4)},
         [node("Pad", ["x", "frozen.pads", "frozen.value"], "y", mode="constant")],
         lambda e: F.pad(e["x"], (0, 2, 1, -1), value=0.5),
         consts={"frozen.pads": i64([1, 0, -1, 2]), "frozen.value": np.array(0.5, np.float32)}, group=g)
    for mode in ("reflect", "edge"):
        def padded(e, mode=mode):
            rows = torch.tensor(np.pad(np.arange(3), (2, 1), mode=mode))
            cols = torch.tensor(np.pad(np.arange(4), (1, 3), mode=mode))
            return e["x"].index_select(1, rows).index_select(2, cols)
        case("pad_" + mode, {"x": rand(2, 3, 4)}, [node("Pad", ["x", "frozen.pads"], "y", mode=mode)],
             padded, consts={"frozen.pads": i64([0, 2, 1, 0, 1, 3])}, group=g)


def define_recurrent():
    recurrent_cases.define(case, node, rand)


def define_import_ops():
    import_op_cases.define(case, node, i64)


def define_coverage():
    coverage_cases.define(case, node, i64)


def define_image():
    image_cases.define(case, node, i64)


for define in (define_elementwise, define_linalg, define_conv_pool, define_norm_loss,
               define_reduce_movement, define_composites, define_import_composites,
               define_recurrent, define_import_ops, define_coverage, define_image):
    define()


#===------------------------------------------------------------------------===#
# Models, compilation, comparison
#===------------------------------------------------------------------------===#

def build_model(cases, path):
    """One model holding every case, prefixed c<i>.; loss = sum of the cases'
    ReduceSum(y * R)."""
    nodes, inits, losses = [], [], []
    for i, c in enumerate(cases):
        prefix = "c%d." % i

        def rename(name):
            return prefix + name if name else name
        def rename_graph(graph):
            """A subgraph's (an If branch's, a Loop body's) names, which
            read the case's."""
            for inner in graph.node:
                inner.input[:] = [rename(x) for x in inner.input]
                inner.output[:] = [rename(x) for x in inner.output]
                for attr in inner.attribute:
                    if attr.HasField("g"):
                        rename_graph(attr.g)
            for value in list(graph.input) + list(graph.output):
                value.name = rename(value.name)
        for n in c.nodes:
            copy = onnx.NodeProto()
            copy.CopyFrom(n)
            copy.input[:] = [rename(x) for x in n.input]
            copy.output[:] = [rename(x) for x in n.output]
            copy.name = prefix + (n.name or n.op_type)
            for attr in copy.attribute:
                if attr.HasField("g"):
                    rename_graph(attr.g)
            nodes.append(copy)
        tensors = dict(c.consts)
        tensors.update(c.params)
        tensors["frozen.R"] = c.r
        for name, value in tensors.items():
            inits.append(numpy_helper.from_array(np.asarray(value), prefix + name))
        nodes.append(node("Mul", [prefix + "y", prefix + "frozen.R"], prefix + "yr"))
        nodes.append(node("ReduceSum", [prefix + "yr"], prefix + "loss", keepdims=0))
        losses.append(prefix + "loss")
    total = losses[0]
    for i, other in enumerate(losses[1:]):
        out = "loss" if i == len(losses) - 2 else "sum%d" % i
        nodes.append(node("Add", [total, other], out))
        total = out
    if total != "loss":
        nodes.append(node("Identity", [total], "loss"))
    graph = helper.make_graph(nodes, "gradient_check", [],
                              [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    opset = max(c.opset for c in cases)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, path)


def run_weft(cases, directory):
    """Compiles and runs the cases as one model. Returns (outputs, error)."""
    os.makedirs(directory, exist_ok=True)
    model = os.path.join(directory, "model.onnx")
    build_model(cases, model)
    bundle = os.path.join(directory, "bundle")
    shutil.rmtree(bundle, ignore_errors=True)
    compiled = weft_tools.compile_bundle(model, bundle,
                                         extra_args=["--emit-gradients", "--freeze", FREEZE_GLOB])
    if not compiled.ok:
        return None, "weftc compile failed: " + compiled.message(1500)
    out = os.path.join(directory, "out")
    shutil.rmtree(out, ignore_errors=True)
    ran = weft_tools.run_bundle(bundle, {}, out)
    if not ran.ok:
        return None, "weft run failed: " + ran.message(1500)
    names = ["loss"] + ["grad:c%d.%s" % (i, p) for i, c in enumerate(cases) for p in c.params]
    arrays, missing = weft_tools.read_outputs(out, names)
    if missing:
        return None, "outputs missing: " + ", ".join(missing)
    return arrays, None


def compare(c, index, arrays, reference):
    """(ok, detail) for one case's gradients against finite differences."""
    details, ok = [], True
    for p in c.params:
        got = arrays["grad:c%d.%s" % (index, p)].astype(np.float64)
        want = reference[p]
        if got.shape != want.shape:
            return False, "%s: shape %s, expected %s" % (p, got.shape, want.shape)
        err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-6)
        if not np.isfinite(err) or err > TOLERANCE:
            ok = False
            worst = np.unravel_index(np.argmax(np.abs(got - want)), want.shape) if want.size else ()
            details.append("%s: rel err %.2e (at %s: %.6g vs fd %.6g)" % (
                p, err, list(worst), got[worst] if want.size else 0, want[worst] if want.size else 0))
        else:
            details.append("%s %.1e" % (p, err))
    return ok, ", ".join(details)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--filter", help="only cases whose name matches this regex")
    parser.add_argument("--work-dir", help="keep models and bundles here (default: a temp dir)")
    parser.add_argument("--verbose", action="store_true", help="print the errors of passing cases")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    args = parser.parse_args()

    cases = [c for c in CASES if not args.filter or re.search(args.filter, c.name)]
    if args.list:
        for c in cases:
            print(c.group, c.name)
        return 0
    if not cases:
        print("gradients: no case matches")
        return 1
    work = args.work_dir or tempfile.mkdtemp(prefix="weft-gradients-")
    groups = {}
    for c in cases:
        groups.setdefault(c.group, []).append(c)

    # weft runs the groups two at a time while the references are computed.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {g: pool.submit(run_weft, cs, os.path.join(work, g)) for g, cs in groups.items()}
        references = {c.name: c.reference_gradients() for c in cases}
        results = {g: f.result() for g, f in futures.items()}

    passed = failed = 0
    for g, cs in groups.items():
        arrays, error = results[g]
        per_case = {}
        if error:
            # Pinpoint: each case on its own.
            for c in cs:
                per_case[c.name] = run_weft([c], os.path.join(work, g + "." + c.name))
        for i, c in enumerate(cs):
            case_arrays, case_error, index = arrays, error, i
            if error:
                (case_arrays, case_error), index = per_case[c.name], 0
            if case_error:
                ok, detail = False, case_error.replace("\n", " | ")
            else:
                ok, detail = compare(c, index, case_arrays, references[c.name])
            if ok:
                passed += 1
            else:
                failed += 1
            if ok and not args.verbose:
                print("PASS %-45s" % c.name)
            else:
                print("%s %-45s %s" % ("PASS" if ok else "FAIL", c.name, detail))
        if not error:
            want = sum(c.loss(c.params) for c in cs)
            got = float(arrays["loss"])
            if abs(got - want) > 1e-4 * max(1.0, abs(want)):
                print("FAIL %-45s loss %.8g, expected %.8g" % ("loss of group " + g, got, want))
                failed += 1
    print("gradients: %d passed, %d failed" % (passed, failed))
    if not args.work_dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
