#!/usr/bin/python3
"""Cross-check weft's importers against onnxruntime on random small models.

    /usr/bin/python3 test/ort/cross_check.py [--filter REGEX] [--seeds N]
        [--work-dir DIR] [--verbose]

The ONNX backend test data (test/conformance) has a few fixed cases per op;
attributes that interact (LSTM's clip with a cell state past it, Resize's
coordinate modes with cubic weights, scatters of computed tensors, pools'
ceil_mode with auto_pad) are where an importer's reading of the spec can go
wrong unnoticed. This script builds
one model per case and seed with random attributes and inputs, compiles and
runs it with weftc / weft (CPU), runs the same model with onnxruntime-node
(bench/ort_bench.js; installed into bench/node_modules with `npm install
--ignore-scripts onnxruntime-node` when missing) and compares every output:
|weft - ort| <= 1e-5 + 1e-4 * max|ort|. Exit status 0 when all agree, 1 on a
mismatch or a tool failure, 77 when onnxruntime-node cannot be installed
(lit reads it as unsupported).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "tools"))
import weft_tools  # noqa: E402

BENCH = os.path.join(ROOT, "bench")
F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def ensure_ort():
    """node, with onnxruntime-node loadable from bench/, or None."""
    node = shutil.which("node")
    if not node:
        return None
    check = [node, "-e", "require(require('path').join(%r, 'node_modules', "
             "'onnxruntime-node'))" % BENCH]
    if subprocess.run(check, capture_output=True).returncode == 0:
        return node
    npm = shutil.which("npm")
    if not npm:
        return None
    subprocess.run([npm, "install", "--ignore-scripts", "--no-audit", "--no-fund",
                    "--prefix", BENCH, "onnxruntime-node"], capture_output=True)
    return node if subprocess.run(check, capture_output=True).returncode == 0 else None


def model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


# ---- cases: each returns (ModelProto, {input name: ndarray}) ---------------

def recurrent(rng):
    cell = rng.choice(["RNN", "GRU", "LSTM"])
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[cell]
    direction = rng.choice(["forward", "reverse", "bidirectional"])
    d = 2 if direction == "bidirectional" else 1
    T, B, I, H = int(rng.integers(2, 7)), int(rng.integers(1, 4)), 3, int(rng.integers(2, 5))
    layout = 0  # onnxruntime runs layout 0 only (layout 1: the gradient cases)
    attrs = {"hidden_size": H, "direction": direction, "layout": layout}
    if rng.random() < 0.6:
        attrs["clip"] = float(rng.uniform(0.2, 1.0))
    if cell == "GRU":
        attrs["linear_before_reset"] = int(rng.integers(0, 2))
    if cell == "LSTM" and rng.random() < 0.3:
        attrs["input_forget"] = 1
    if rng.random() < 0.3:
        pool = ["Tanh", "Sigmoid", "Relu", "HardSigmoid", "Softsign", "LeakyRelu"]
        attrs["activations"] = [str(rng.choice(pool)) for _ in range({"RNN": 1, "GRU": 2, "LSTM": 3}[cell] * d)]
    scale = float(rng.uniform(0.5, 2.5))
    inits = [numpy_helper.from_array(rng.uniform(-scale, scale, (d, gates * H, I)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.uniform(-scale, scale, (d, gates * H, H)).astype(np.float32), "R"),
             numpy_helper.from_array(rng.uniform(-1, 2, (d, 2 * gates * H)).astype(np.float32), "B")]
    names = ["x", "W", "R", "B"]
    inputs = {"x": rng.uniform(-2, 2, (B, T, I) if layout else (T, B, I)).astype(np.float32)}
    value_infos = [vi("x", F32, list(inputs["x"].shape))]
    lens = None
    if rng.random() < 0.4:
        lens = rng.integers(1, T + 1, B).astype(np.int32)
        inits.append(numpy_helper.from_array(lens, "lens"))
    names.append("lens" if lens is not None else "")
    state = (B, d, H) if layout else (d, B, H)
    if rng.random() < 0.5:
        inits.append(numpy_helper.from_array(rng.uniform(-1, 1, state).astype(np.float32), "h0"))
        names.append("h0")
    else:
        names.append("")
    if cell == "LSTM":
        if rng.random() < 0.5:
            inits.append(numpy_helper.from_array(rng.uniform(-1.5, 1.5, state).astype(np.float32), "c0"))
            names.append("c0")
        else:
            names.append("")
        if rng.random() < 0.4:
            inits.append(numpy_helper.from_array(rng.uniform(-1, 1, (d, 3 * H)).astype(np.float32), "P"))
            names.append("P")
    while names[-1] == "":
        names.pop()
    outs = ["Y", "Yh"] + (["Yc"] if cell == "LSTM" else [])
    node = helper.make_node(cell, names, outs, **attrs)
    return model([node], value_infos, [vi(o, F32, None) for o in outs], inits), inputs


def resize(rng):
    mode = str(rng.choice(["nearest", "linear", "cubic"]))
    coord = str(rng.choice(["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]))
    attrs = {"mode": mode, "coordinate_transformation_mode": coord}
    if mode == "nearest":
        attrs["nearest_mode"] = str(rng.choice(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]))
    if mode == "cubic":
        attrs["cubic_coeff_a"] = float(rng.choice([-0.75, -0.5]))
        attrs["exclude_outside"] = int(rng.integers(0, 2))
    h, w = int(rng.integers(2, 7)), int(rng.integers(2, 7))
    x = rng.uniform(-1, 1, (1, 2, h, w)).astype(np.float32)
    sizes = np.array([1, 2, int(rng.integers(1, 10)), int(rng.integers(1, 10))], np.int64)
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], **attrs)
    return model([node], [vi("x", F32, list(x.shape))], [vi("y", F32, None)],
                 [numpy_helper.from_array(sizes, "sizes")]), {"x": x}


def cumsum(rng):
    x = rng.uniform(-1, 1, (3, 5, 4)).astype(np.float32)
    axis = int(rng.integers(-3, 3))
    node = helper.make_node("CumSum", ["x", "ax"], ["y"], exclusive=int(rng.integers(0, 2)),
                            reverse=int(rng.integers(0, 2)))
    return model([node], [vi("x", F32, [3, 5, 4])], [vi("y", F32, None)],
                 [numpy_helper.from_array(np.array(axis, np.int64), "ax")]), {"x": x}


def scatter_gather(rng):
    kind = str(rng.choice(["ScatterND", "ScatterElements", "GatherND", "GatherElements"]))
    data = rng.uniform(-1, 1, (4, 3, 5)).astype(np.float32)
    ins = {"data": data}
    infos = [vi("data", F32, [4, 3, 5])]
    inits = []
    if kind == "ScatterND":
        k = int(rng.integers(1, 3))
        rows = rng.permutation(4 * 3)[:3] if k == 2 else rng.permutation(4)[:2]
        idx = np.stack(np.unravel_index(rows, (4, 3)), -1) if k == 2 else rows.reshape(-1, 1)
        upd = rng.uniform(-1, 1, idx.shape[:-1] + data.shape[k:]).astype(np.float32)
        ins.update(idx=idx.astype(np.int64), upd=upd)
        infos += [vi("idx", I64, list(idx.shape)), vi("upd", F32, list(upd.shape))]
        node = helper.make_node(kind, ["data", "idx", "upd"], ["y"],
                                reduction=str(rng.choice(["none", "add"])))
    elif kind == "ScatterElements":
        axis = int(rng.integers(0, 3))
        shape = [4, 3, 5]
        shape[axis] = 2
        # Distinct targets along the axis at each position: a permutation's
        # head (ONNX leaves repeated ones undefined under none).
        n = [4, 3, 5][axis]
        other = [s for i, s in enumerate([4, 3, 5]) if i != axis]
        perm = np.stack([rng.permutation(n)[:2] for _ in range(int(np.prod(other)))], -1)
        idx = np.moveaxis(perm.reshape([2] + other), 0, axis)
        idx = np.where(rng.random(idx.shape) < 0.3, idx - [4, 3, 5][axis], idx)  # negative
        upd = rng.uniform(-1, 1, shape).astype(np.float32)
        ins.update(idx=idx.astype(np.int64), upd=upd)
        infos += [vi("idx", I64, list(idx.shape)), vi("upd", F32, shape)]
        node = helper.make_node(kind, ["data", "idx", "upd"], ["y"], axis=axis,
                                reduction=str(rng.choice(["none", "add"])))
    elif kind == "GatherND":
        batch = int(rng.integers(0, 2))
        if batch:
            idx = np.stack([rng.integers(0, 3, (4, 2)), rng.integers(-5, 5, (4, 2))], -1)
        else:
            idx = np.stack([rng.integers(-4, 4, 3), rng.integers(0, 3, 3)], -1)
        ins["idx"] = idx.astype(np.int64)
        infos.append(vi("idx", I64, list(idx.shape)))
        node = helper.make_node(kind, ["data", "idx"], ["y"], batch_dims=batch)
    else:
        axis = int(rng.integers(-3, 3))
        n = [4, 3, 5][axis]
        idx = rng.integers(-n, n, (3, 2, 4)).astype(np.int64)
        ins["idx"] = idx
        infos.append(vi("idx", I64, [3, 2, 4]))
        node = helper.make_node(kind, ["data", "idx"], ["y"], axis=axis)
    return model([node], infos, [vi("y", F32, None)], inits), ins


def selection(rng):
    kind = str(rng.choice(["TopK", "Hardmax", "OneHot", "ArgMax"]))
    # Small integers as floats: ties.
    x = rng.integers(-3, 4, (3, 6)).astype(np.float32)
    if kind == "TopK":
        node = helper.make_node(kind, ["x", "k"], ["v", "i"], axis=int(rng.integers(-2, 2)),
                                largest=int(rng.integers(0, 2)))
        k = np.array([int(rng.integers(1, 4))], np.int64)
        return model([node], [vi("x", F32, [3, 6])], [vi("v", F32, None), vi("i", I64, None)],
                     [numpy_helper.from_array(k, "k")]), {"x": x}
    if kind == "Hardmax":
        node = helper.make_node(kind, ["x"], ["y"], axis=int(rng.integers(-2, 2)))
        return model([node], [vi("x", F32, [3, 6])], [vi("y", F32, None)]), {"x": x}
    if kind == "ArgMax":
        node = helper.make_node(kind, ["x"], ["y"], axis=int(rng.integers(-2, 2)),
                                select_last_index=int(rng.integers(0, 2)))
        return model([node], [vi("x", F32, [3, 6])], [vi("y", I64, None)]), {"x": x}
    t = rng.integers(-5, 5, (2, 3)).astype(np.int64)
    node = helper.make_node(kind, ["t", "depth", "vals"], ["y"], axis=int(rng.integers(-3, 2)))
    return model([node], [vi("t", I64, [2, 3])], [vi("y", F32, None)],
                 [numpy_helper.from_array(np.array(5, np.int64), "depth"),
                  numpy_helper.from_array(np.array([-1.5, 2.0], np.float32), "vals")]), {"t": t}


def elementwise(rng):
    kind = str(rng.choice(["Mod", "ModInt", "Celu", "Shrink", "Asinh", "Acosh", "Atanh",
                           "Sinh", "Cosh", "Tan", "IsInf"]))
    if kind in ("Mod", "ModInt"):
        if kind == "ModInt":
            a = rng.integers(-20, 20, (3, 4)).astype(np.int64)
            b = rng.choice([-7, -3, 2, 5], (3, 4)).astype(np.int64)
            fmod, dt = int(rng.integers(0, 2)), I64
        else:
            a = (rng.uniform(-1e3, 1e3, (3, 4)) * rng.choice([1, 1e6], (3, 4))).astype(np.float32)
            b = rng.uniform(-9, 9, (3, 4)).astype(np.float32)
            fmod, dt = 1, F32
        node = helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)
        return model([node], [vi("a", dt, [3, 4]), vi("b", dt, [3, 4])], [vi("y", dt, None)]), \
            {"a": a, "b": b}
    lo, hi = {"Acosh": (1, 4), "Atanh": (-0.9, 0.9), "Tan": (-1.2, 1.2)}.get(kind, (-3, 3))
    x = rng.uniform(lo, hi, (3, 4)).astype(np.float32)
    attrs = {}
    if kind == "Celu":
        attrs["alpha"] = float(rng.uniform(0.3, 2))
    if kind == "Shrink":
        attrs = {"lambd": float(rng.uniform(0, 1.5)), "bias": float(rng.uniform(-1, 1))}
    out = TensorProto.BOOL if kind == "IsInf" else F32
    if kind == "IsInf":
        x[0, :2] = [np.inf, -np.inf]
        attrs = {"detect_positive": int(rng.integers(0, 2)), "detect_negative": int(rng.integers(0, 2))}
    node = helper.make_node(kind, ["x"], ["y"], **attrs)
    return model([node], [vi("x", F32, [3, 4])], [vi("y", out, None)]), {"x": x}


def losses(rng):
    n, c = 5, 4
    x = rng.uniform(-2, 2, (n, c, 3)).astype(np.float32)
    t = rng.integers(0, c, (n, 3)).astype(np.int64)
    attrs = {"reduction": str(rng.choice(["mean", "sum", "none"]))}
    if rng.random() < 0.5:
        attrs["ignore_index"] = int(rng.integers(0, c))
    names, inits = ["x", "t"], []
    if rng.random() < 0.5:
        inits.append(numpy_helper.from_array(rng.uniform(0.5, 2, c).astype(np.float32), "w"))
        names.append("w")
    nodes = [helper.make_node("NegativeLogLikelihoodLoss", names, ["y"], **attrs)]
    if rng.random() < 0.5:
        nodes.insert(0, helper.make_node("LogSoftmax", ["x0"], ["x"], axis=1))
        return model(nodes, [vi("x0", F32, [n, c, 3]), vi("t", I64, [n, 3])], [vi("y", F32, None)],
                     inits), {"x0": x, "t": t}
    return model(nodes, [vi("x", F32, [n, c, 3]), vi("t", I64, [n, 3])], [vi("y", F32, None)],
                 inits), {"x": x, "t": t}


def rearrange(rng):
    kind = str(rng.choice(["DepthToSpace", "SpaceToDepth"]))
    if kind == "DepthToSpace":
        x = rng.uniform(-1, 1, (2, 8, 2, 3)).astype(np.float32)
        node = helper.make_node(kind, ["x"], ["y"], blocksize=2, mode=str(rng.choice(["DCR", "CRD"])))
    else:
        x = rng.uniform(-1, 1, (2, 3, 4, 6)).astype(np.float32)
        node = helper.make_node(kind, ["x"], ["y"], blocksize=2)
    return model([node], [vi("x", F32, list(x.shape))], [vi("y", F32, None)]), {"x": x}


def conv_pool(rng):
    kind = str(rng.choice(["Conv", "ConvTranspose", "MaxPool", "AveragePool"]))
    c = int(rng.choice([2, 4]))
    x = rng.uniform(-1, 1, (2, c, int(rng.integers(5, 9)), int(rng.integers(5, 9)))).astype(np.float32)
    k = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
    attrs = {"kernel_shape": k, "strides": [int(rng.integers(1, 3)), int(rng.integers(1, 3))]}
    if rng.random() < 0.5:
        attrs["auto_pad"] = str(rng.choice(["SAME_UPPER", "SAME_LOWER", "VALID"]))
    else:
        attrs["pads"] = [int(rng.integers(0, k[0])), int(rng.integers(0, k[1])),
                         int(rng.integers(0, k[0])), int(rng.integers(0, k[1]))]
    inits, names = [], ["x"]
    if kind in ("Conv", "ConvTranspose"):
        group = int(rng.choice([1, c // 2, c]))
        attrs["group"] = group
        if kind == "Conv" and rng.random() < 0.4 and attrs.get("auto_pad") != "SAME_UPPER" \
                and attrs.get("auto_pad") != "SAME_LOWER":
            attrs["dilations"] = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        out = group * int(rng.choice([1, 2]))  # a multiple of the groups
        wshape = (out, c // group, *k) if kind == "Conv" else (c, out // group, *k)
        if kind == "ConvTranspose":
            if "pads" in attrs and rng.random() < 0.5:
                attrs["output_padding"] = [int(rng.integers(0, attrs["strides"][0])),
                                           int(rng.integers(0, attrs["strides"][1]))]
            attrs.pop("auto_pad", None)
            attrs.setdefault("pads", [0, 0, 0, 0])
        inits.append(numpy_helper.from_array(rng.uniform(-1, 1, wshape).astype(np.float32), "w"))
        names.append("w")
        if rng.random() < 0.5:
            inits.append(numpy_helper.from_array(rng.uniform(-1, 1, wshape[0] if kind == "Conv" else out)
                                                 .astype(np.float32), "b"))
            names.append("b")
    else:
        attrs["ceil_mode"] = int(rng.integers(0, 2))
        if kind == "AveragePool":
            attrs["count_include_pad"] = int(rng.integers(0, 2))
        if attrs.get("auto_pad") in ("SAME_UPPER", "SAME_LOWER"):
            attrs["ceil_mode"] = 0
    node = helper.make_node(kind, names, ["y"], **attrs)
    return model([node], [vi("x", F32, list(x.shape))], [vi("y", F32, None)], inits), {"x": x}


def shape_ops(rng):
    kind = str(rng.choice(["Pad", "Slice", "Einsum", "Tile", "Expand", "Split"]))
    x = rng.uniform(-1, 1, (3, 4, 5)).astype(np.float32)
    ins, infos = {"x": x}, [vi("x", F32, [3, 4, 5])]
    outs = [vi("y", F32, None)]
    if kind == "Pad":
        mode = str(rng.choice(["constant", "reflect", "edge", "wrap"]))
        pads = np.array([int(rng.integers(0, 3)) for _ in range(6)], np.int64)
        if mode == "constant" and rng.random() < 0.5:
            pads = np.where(rng.random(6) < 0.3, -1, pads)  # crops
        inits = [numpy_helper.from_array(pads, "pads")]
        node = helper.make_node(kind, ["x", "pads"], ["y"], mode=mode)
        return model([node], infos, outs, inits, opset=19 if mode == "wrap" else 17), ins
    if kind == "Slice":
        starts = np.array([int(rng.integers(-5, 5)) for _ in range(2)], np.int64)
        ends = np.array([int(rng.choice([-100, -1, 2, 4, 100])) for _ in range(2)], np.int64)
        axes = np.array(rng.choice([-3, -2, -1, 0, 1, 2], 2, replace=False) % 3, np.int64)
        if axes[0] == axes[1]:
            axes[1] = (axes[0] + 1) % 3
        steps = np.array([int(rng.choice([-2, -1, 1, 2])) for _ in range(2)], np.int64)
        inits = [numpy_helper.from_array(v, n) for v, n in
                 ((starts, "s"), (ends, "e"), (axes, "a"), (steps, "st"))]
        node = helper.make_node(kind, ["x", "s", "e", "a", "st"], ["y"])
        return model([node], infos, outs, inits), ins
    if kind == "Einsum":
        eq, shapes = [("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ij,kj->ik", [(3, 4), (5, 4)]),
                      ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]), ("ij->ji", [(3, 4)]),
                      ("i,j->ij", [(3,), (4,)]), ("bij->b", [(2, 3, 4)])][int(rng.integers(0, 6))]
        ins = {"a%d" % i: rng.uniform(-1, 1, sh).astype(np.float32) for i, sh in enumerate(shapes)}
        infos = [vi(k, F32, list(v.shape)) for k, v in ins.items()]
        node = helper.make_node(kind, list(ins), ["y"], equation=eq)
        return model([node], infos, outs), ins
    if kind == "Tile":
        reps = np.array([int(rng.integers(1, 3)) for _ in range(3)], np.int64)
        node = helper.make_node(kind, ["x", "r"], ["y"])
        return model([node], infos, outs, [numpy_helper.from_array(reps, "r")]), ins
    if kind == "Expand":
        x1 = rng.uniform(-1, 1, (3, 1, 5)).astype(np.float32)
        shape = np.array([2, 1, 4, 1], np.int64)
        node = helper.make_node(kind, ["x", "sh"], ["y"])
        return model([node], [vi("x", F32, [3, 1, 5])], outs,
                     [numpy_helper.from_array(shape, "sh")]), {"x": x1}
    axis = int(rng.integers(-3, 3))
    n = [3, 4, 5][axis]
    first = int(rng.integers(0, n + 1))
    split = np.array([first, n - first], np.int64)
    node = helper.make_node(kind, ["x", "sp"], ["y", "z"], axis=axis)
    return model([node], infos, [vi("y", F32, None), vi("z", F32, None)],
                 [numpy_helper.from_array(split, "sp")]), ins


def normalization(rng):
    kind = str(rng.choice(["LayerNormalization", "InstanceNormalization", "Softmax",
                           "LogSoftmax", "ReduceLogSumExp", "ReduceL2", "Gemm"]))
    x = rng.uniform(-2, 2, (2, 3, 4)).astype(np.float32)
    infos = [vi("x", F32, [2, 3, 4])]
    if kind == "LayerNormalization":
        axis = int(rng.integers(-2, 3))
        norm = [2, 3, 4][axis:] if axis >= 0 else [2, 3, 4][axis:]
        inits = [numpy_helper.from_array(rng.uniform(0.5, 1.5, norm).astype(np.float32), "g"),
                 numpy_helper.from_array(rng.uniform(-1, 1, norm).astype(np.float32), "b")]
        node = helper.make_node(kind, ["x", "g", "b"], ["y"], axis=axis,
                                epsilon=float(rng.choice([1e-5, 1e-3])))
        return model([node], infos, [vi("y", F32, None)], inits), {"x": x}
    if kind == "InstanceNormalization":
        inits = [numpy_helper.from_array(rng.uniform(0.5, 1.5, 3).astype(np.float32), "g"),
                 numpy_helper.from_array(rng.uniform(-1, 1, 3).astype(np.float32), "b")]
        node = helper.make_node(kind, ["x", "g", "b"], ["y"], epsilon=1e-4)
        return model([node], infos, [vi("y", F32, None)], inits), {"x": x}
    if kind in ("Softmax", "LogSoftmax"):
        node = helper.make_node(kind, ["x"], ["y"], axis=int(rng.integers(-3, 3)))
        return model([node], infos, [vi("y", F32, None)]), {"x": x}
    if kind in ("ReduceLogSumExp", "ReduceL2"):
        axes = sorted(set(int(a) for a in rng.choice([0, 1, 2], int(rng.integers(1, 3)))))
        node = helper.make_node(kind, ["x"], ["y"], axes=axes, keepdims=int(rng.integers(0, 2)))
        return model([node], infos, [vi("y", F32, None)]), {"x": x}
    ta, tb = int(rng.integers(0, 2)), int(rng.integers(0, 2))
    a = rng.uniform(-1, 1, (4, 3) if ta else (3, 4)).astype(np.float32)
    b = rng.uniform(-1, 1, (5, 4) if tb else (4, 5)).astype(np.float32)
    c = rng.uniform(-1, 1, (int(rng.choice([1, 3])), 5)).astype(np.float32)
    node = helper.make_node(kind, ["a", "b", "c"], ["y"], transA=ta, transB=tb,
                            alpha=float(rng.uniform(0.5, 2)), beta=float(rng.uniform(0, 2)))
    return model([node], [vi("a", F32, list(a.shape))], [vi("y", F32, None)],
                 [numpy_helper.from_array(b, "b"), numpy_helper.from_array(c, "c")]), {"a": a}


def batchnorm(rng):
    """BatchNormalization in both modes: training mode normalizes with the
    batch's statistics and (when asked) outputs the running ones mixed by
    momentum (ONNX: the population variance)."""
    shape = [[5, 3], [2, 3, 4], [2, 3, 4, 3]][int(rng.integers(0, 3))]
    training = int(rng.integers(0, 2))
    x = (rng.uniform(-2, 2, shape) * rng.uniform(0.5, 3)).astype(np.float32)
    inits = [numpy_helper.from_array(rng.uniform(0.5, 1.5, 3).astype(np.float32), "s"),
             numpy_helper.from_array(rng.uniform(-1, 1, 3).astype(np.float32), "b"),
             numpy_helper.from_array(rng.uniform(-1, 1, 3).astype(np.float32), "m"),
             numpy_helper.from_array(rng.uniform(0.5, 2, 3).astype(np.float32), "v")]
    outputs = ["y", "rm", "rv"] if training else ["y"]  # onnxruntime wants all three
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], outputs,
                            training_mode=training, epsilon=float(rng.choice([1e-5, 1e-2])),
                            momentum=float(rng.uniform(0.5, 0.99)))
    return model([node], [vi("x", F32, shape)], [vi(o, F32, None) for o in outputs],
                 inits, opset=15), {"x": x}


CASES = {"recurrent": recurrent, "resize": resize, "cumsum": cumsum,
         "scatter_gather": scatter_gather, "selection": selection,
         "elementwise": elementwise, "losses": losses, "rearrange": rearrange,
         "conv_pool": conv_pool, "shape_ops": shape_ops, "normalization": normalization,
         "batchnorm": batchnorm}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, (p.stdout + p.stderr).strip()


def check_case(name, seed, node, work, verbose):
    rng = np.random.default_rng(seed)
    m, inputs = CASES[name](rng)
    d = os.path.join(work, "%s-%d" % (name, seed))
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    onnx.save(m, path)
    args = []
    for k, v in inputs.items():
        f = os.path.join(d, k + ".npy")
        np.save(f, v)
        args += ["--input", "%s=%s" % (k, f)]
    ops = " ".join(sorted({n.op_type for n in m.graph.node}))
    attrs = "; ".join("%s %s" % (n.op_type, {a.name: helper.get_attribute_value(a) for a in n.attribute})
                      for n in m.graph.node)
    rc, out = run([weft_tools.find_tool("weftc"), "compile", path, "-o", os.path.join(d, "b")])
    if rc != 0:
        return False, "weftc failed: " + out[-400:] + " [" + attrs + "]"
    rc, out = run([weft_tools.find_tool("weft"), "run", os.path.join(d, "b"), *args,
                   "--output-dir", os.path.join(d, "weft")])
    if rc != 0:
        return False, "weft run failed: " + out[-400:]
    rc, out = run([node, os.path.join(BENCH, "ort_bench.js"), "--model", path, *args,
                   "--repeat", "1", "--warmup", "0", "--output-dir", os.path.join(d, "ort")])
    if rc != 0:
        return None, "onnxruntime refused the model: " + out[-300:]
    worst = 0.0
    for o in m.graph.output:
        fname = re.sub(r"[^A-Za-z0-9._-]", "_", o.name) + ".npy"
        a = np.load(os.path.join(d, "weft", fname))
        b = np.load(os.path.join(d, "ort", fname))
        if a.shape != b.shape:
            return False, "output %s: shape %s, onnxruntime %s [%s]" % (o.name, a.shape, b.shape, attrs)
        if a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
            if not np.array_equal(a, b):
                return False, "output %s differs [%s]" % (o.name, attrs)
            continue
        scale = float(np.max(np.abs(b))) if b.size else 0.0
        err = float(np.max(np.abs(a - b))) if b.size else 0.0
        if not err <= 1e-5 + 1e-4 * scale:
            return False, "output %s: max |weft - ort| %.3g (max |ort| %.3g) [%s]" % (
                o.name, err, scale, attrs)
        worst = max(worst, err / max(scale, 1e-30))
    return True, "%s: max relative %.1e" % (ops, worst) + (" [" + attrs + "]" if verbose else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--filter", help="only cases whose name matches this regex")
    ap.add_argument("--seeds", type=int, default=12, help="random models per case (default 12)")
    ap.add_argument("--work-dir", help="keep models and outputs here (default: a temp dir)")
    ap.add_argument("--verbose", action="store_true", help="print each model's attributes")
    args = ap.parse_args()
    node = ensure_ort()
    if not node:
        print("cross_check: onnxruntime-node is not available (node/npm missing or offline)")
        return 77
    work = args.work_dir or tempfile.mkdtemp(prefix="weft-ort-")
    passed = failed = refused = 0
    for name in CASES:
        if args.filter and not re.search(args.filter, name):
            continue
        for seed in range(args.seeds):
            ok, msg = check_case(name, seed, node, work, args.verbose)
            tag = {True: "PASS", False: "FAIL", None: "SKIP"}[ok]
            if ok is None:
                refused += 1
            elif ok:
                passed += 1
            else:
                failed += 1
            if not ok or args.verbose:
                print("%s %s/%d  %s" % (tag, name, seed, msg))
    print("cross_check: %d passed, %d failed, %d refused by onnxruntime" % (passed, failed, refused))
    if not args.work_dir:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
