"""Small ONNX models for the frontend's lit tests, built with Debian's onnx
1.12 (run under /usr/bin/python3).

    onnx_models.py OUTDIR GROUP...

writes every model of each GROUP to OUTDIR/NAME.onnx (plus any side files,
e.g. external data). Groups are the functions decorated with @group below.
The models are never passed through onnx.checker: opsets above 17 are newer
than onnx 1.12's schemas, and several models are broken on purpose.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT
F16 = TensorProto.FLOAT16
I64 = TensorProto.INT64
I32 = TensorProto.INT32
BOOL = TensorProto.BOOL
INT_MAX = 2**63 - 1

GROUPS = {}


def group(fn):
    GROUPS[fn.__name__] = fn
    return fn


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def floats(name, shape, seed=0):
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def node(op, inputs, outputs, name=None, domain=None, **attrs):
    name = outputs[0] if name is None else name
    return helper.make_node(op, inputs, outputs, name=name, domain=domain, **attrs)


def model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="weft-lit")
    m.ir_version = 8
    return m


def unary_model(op, shape=(2, 3), dtype=F32, opset=17, **attrs):
    return model([node(op, ["x"], ["y"], **attrs)], [vi("x", dtype, shape)],
                 [vi("y", dtype, None)], opset=opset)


def binary_model(op, a=(2, 3), b=(3,), dtype=F32, out=None, opset=17):
    return model([node(op, ["a", "b"], ["y"])], [vi("a", dtype, a), vi("b", dtype, b)],
                 [vi("y", out or dtype, None)], opset=opset)


@group
def elementwise():
    m = {}
    for op in ["Add", "Sub", "Mul", "Div", "Max", "Min"]:
        m[op.lower()] = binary_model(op)
    m["pow"] = model([node("Pow", ["a", "e"], ["y"])], [vi("a", F32, [2, 3]), vi("e", I64, [])],
                     [vi("y", F32, None)])
    for op in ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]:
        m[op.lower()] = binary_model(op, out=BOOL)
    m["and"] = binary_model("And", dtype=BOOL)
    m["or"] = binary_model("Or", dtype=BOOL)
    m["not"] = unary_model("Not", dtype=BOOL)
    for op in ["Sqrt", "Neg", "Exp", "Log", "Tanh", "Erf", "Relu", "Sigmoid"]:
        m[op.lower()] = unary_model(op)
    m["where"] = model([node("Where", ["c", "a", "b"], ["y"])],
                       [vi("c", BOOL, [2, 1]), vi("a", F32, [2, 3]), vi("b", F32, [3])],
                       [vi("y", F32, None)])
    m["max3"] = model([node("Max", ["a", "b", "c"], ["y"])],
                      [vi("a", F32, [3]), vi("b", F32, [3]), vi("c", F32, [2, 3])],
                      [vi("y", F32, None)])
    m["cast"] = unary_model("Cast", to=F16, opset=19, saturate=1)
    m["cast_same"] = unary_model("Cast", to=F32)
    m["mixed_types"] = model([node("Add", ["a", "b"], ["y"])],
                             [vi("a", F32, [2]), vi("b", I64, [2])], [vi("y", F32, None)])
    m["bad_broadcast"] = binary_model("Add", a=(2, 3), b=(4,))
    m["sqrt_int"] = unary_model("Sqrt", dtype=I32)
    return m


@group
def composed():
    """Ops the importer builds from weft's elementwise ops, Pad and Einsum."""
    m = {}
    x = [vi("x", F32, [2, 3])]
    y = [vi("y", F32, None)]
    m["sin"] = unary_model("Sin")
    m["cos"] = unary_model("Cos")
    m["round"] = unary_model("Round")
    m["reciprocal"] = unary_model("Reciprocal")
    m["abs"] = unary_model("Abs")
    m["clip"] = model([node("Clip", ["x", "lo", "hi"], ["y"])], x, y,
                      inits=[numpy_helper.from_array(np.array(-1, np.float32), "lo"),
                             numpy_helper.from_array(np.array(1, np.float32), "hi")])
    m["clip_min_only"] = model([node("Clip", ["x", "lo"], ["y"])], x, y,
                               inits=[numpy_helper.from_array(np.array(0, np.float32), "lo")])
    m["clip_vector_bound"] = model([node("Clip", ["x", "lo"], ["y"])], x, y,
                                   inits=[numpy_helper.from_array(np.zeros(3, np.float32), "lo")])
    m["clip_int_bound"] = model([node("Clip", ["x", "lo"], ["y"])], x, y,
                                inits=[numpy_helper.from_array(np.array(0, np.int64), "lo")])
    m["hardsigmoid"] = unary_model("HardSigmoid", alpha=0.25, beta=0.5)
    m["hardswish"] = unary_model("HardSwish")
    m["hardswish_int"] = unary_model("HardSwish", dtype=I32)
    m["leakyrelu"] = unary_model("LeakyRelu", alpha=0.1)
    m["elu"] = unary_model("Elu", alpha=0.5)
    m["softplus"] = unary_model("Softplus")
    m["mish"] = unary_model("Mish", opset=18)
    m["gelu"] = unary_model("Gelu", opset=20)
    m["gelu_tanh"] = unary_model("Gelu", opset=20, approximate="tanh")
    m["gelu_bad"] = unary_model("Gelu", opset=20, approximate="fast")
    m["prelu_channel"] = model([node("PRelu", ["x", "slope"], ["y"])], [vi("x", F32, [2, 3, 4])], y,
                               inits=[floats("slope", [3])])
    m["mean"] = model([node("Mean", ["a", "b"], ["y"])], [vi("a", F32, [2, 3]), vi("b", F32, [3])], y)

    def pad(mode, pads, shape=(3, 4), extra=(), opset=17, value=None):
        inputs = ["x", "pads"] + (["value"] if value is not None else [])
        inits = [ints("pads", pads)]
        if value is not None:
            inits.append(numpy_helper.from_array(np.array(value, np.float32), "value"))
        inputs += list(extra)
        return model([node("Pad", inputs, ["y"], mode=mode)], [vi("x", F32, list(shape))], y,
                     inits=inits, opset=opset)
    m["pad_constant"] = pad("constant", [1, -1, 0, 2], value=0.5)
    m["pad_reflect"] = pad("reflect", [0, 2, 0, 1])
    m["pad_edge"] = pad("edge", [1, 0, 0, 0])
    m["pad_wrap"] = pad("wrap", [0, 5, 0, 0], opset=19)
    m["pad_wrap_opset17"] = pad("wrap", [0, 1, 0, 0])
    m["pad_bad_mode"] = pad("mirror", [0, 1, 0, 1])
    m["pad_wrong_count"] = pad("constant", [1, 1, 1])
    m["pad_crop_too_much"] = pad("constant", [-2, 0, -2, 0])
    m["pad_reflect_too_wide"] = pad("reflect", [0, 4, 0, 0])
    m["pad_axes"] = model([node("Pad", ["x", "pads", "", "axes"], ["y"])], [vi("x", F32, [3, 4])], y,
                          inits=[ints("pads", [2, 1]), ints("axes", [-1])], opset=18)

    def einsum(eq, *shapes, dtype=F32):
        names = ["x%d" % i for i in range(len(shapes))]
        return model([node("Einsum", names, ["y"], equation=eq)],
                     [vi(n, dtype, list(s)) for n, s in zip(names, shapes)], y)
    m["einsum_heads"] = einsum("bhqd,bhkd->bhqk", (2, 4, 5, 8), (2, 4, 6, 8))
    m["einsum_implicit"] = einsum("ij,jk", (3, 4), (4, 5))
    m["einsum_ellipsis"] = einsum("...ij,jk->...ik", (2, 3, 4), (4, 5))
    m["einsum_outer"] = einsum("bi,bj->bij", (2, 3), (2, 4))
    m["einsum_diagonal"] = einsum("ii->i", (3, 3))
    m["einsum_rank"] = einsum("ij->i", (3, 3, 3))
    m["einsum_terms"] = einsum("ij,jk->ik", (3, 4))
    m["einsum_unknown_label"] = einsum("ij->ik", (3, 4))
    m["einsum_sizes"] = einsum("ij,jk->ik", (3, 4), (5, 6))
    m["einsum_int"] = einsum("ij->ji", (3, 4), dtype=I64)
    m["einsum_symbol"] = einsum("i$->i", (3, 4))

    def convt(shape=(1, 2, 3, 3), w=(2, 3, 3, 3), **attrs):
        return model([node("ConvTranspose", ["x", "w"], ["y"], **attrs)], [vi("x", F32, list(shape))], y,
                     inits=[floats("w", list(w))])
    m["convtranspose"] = convt(strides=[2, 2], pads=[1, 1, 0, 0], output_padding=[1, 0])
    m["convtranspose_output_shape"] = convt(strides=[2, 2], output_shape=[6, 6], auto_pad="SAME_UPPER")
    m["convtranspose_bad_outpad"] = convt(strides=[2, 2], output_padding=[2, 0])
    m["convtranspose_bad_weight"] = convt(w=(3, 3, 3, 3))

    def resize(mode, extra_inputs, inits, **attrs):
        return model([node("Resize", ["x"] + extra_inputs, ["y"], mode=mode, **attrs)],
                     [vi("x", F32, [1, 1, 2, 3])], y, inits=inits)
    sizes = ints("sizes", [1, 1, 4, 5])
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    m["resize_nearest"] = resize("nearest", ["", "scales"], [scales],
                                 coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    m["resize_linear"] = resize("linear", ["", "", "sizes"], [sizes],
                                coordinate_transformation_mode="align_corners")
    m["resize_cubic"] = resize("cubic", ["", "", "sizes"], [sizes])
    m["resize_lanczos"] = resize("lanczos", ["", "", "sizes"], [sizes])
    m["resize_cubic_antialias"] = resize("cubic", ["", "", "sizes"], [sizes], antialias=1)
    m["resize_both"] = resize("linear", ["", "scales", "sizes"], [sizes, scales])

    m["argmax"] = model([node("ArgMax", ["x"], ["y"], axis=1, keepdims=0)], x, [vi("y", I64, None)])
    m["argmin_last"] = model([node("ArgMin", ["x"], ["y"], axis=1, select_last_index=1)], x,
                             [vi("y", I64, None)])
    m["argmax_bool"] = model([node("ArgMax", ["b"], ["y"])], [vi("b", BOOL, [3])], [vi("y", I64, None)])
    m["reducemin"] = model([node("ReduceMin", ["x"], ["y"], axes=[1])], x, y)
    idx22 = [vi("i", I64, [2, 2])]
    m["gather_elements"] = model([node("GatherElements", ["x", "i"], ["y"], name="ge", axis=1)],
                                 x + idx22, y)
    m["gather_elements_oob"] = model([node("GatherElements", ["x", "i"], ["y"], name="ge", axis=0)],
                                     x, y, inits=[ints("i", [[0, 2]])])
    m["gather_elements_rank"] = model([node("GatherElements", ["x", "i"], ["y"], name="ge")],
                                      x + [vi("i", I64, [2])], y)
    m["scatter_elements"] = model(
        [node("ScatterElements", ["x", "i", "u"], ["y"], name="se", axis=1)],
        x + idx22 + [vi("u", F32, [2, 2])], y)
    m["scatter_elements_add"] = model(
        [node("ScatterElements", ["x", "i", "u"], ["y"], name="se", reduction="add")],
        x + idx22 + [vi("u", F32, [2, 2])], y)
    m["scatter_elements_mul"] = model(
        [node("ScatterElements", ["x", "i", "u"], ["y"], name="se", reduction="mul")],
        x + idx22 + [vi("u", F32, [2, 2])], y)
    m["scatter_elements_add_int"] = model(
        [node("ScatterElements", ["a", "i", "b"], ["y"], name="se", reduction="add")],
        [vi("a", I64, [2, 3])] + idx22 + [vi("b", I64, [2, 2])], [vi("y", I64, None)])
    m["scatter_elements_updates"] = model(
        [node("ScatterElements", ["x", "i", "u"], ["y"], name="se")],
        x + idx22 + [vi("u", F32, [2, 1])], y)
    labels3 = [vi("t", I64, [3])]
    scores = [vi("s", F32, [3, 4])]
    m["nll_of_log_softmax"] = model(
        [node("LogSoftmax", ["s"], ["lp"], axis=1),
         node("NegativeLogLikelihoodLoss", ["lp", "t"], ["y"], name="nll", ignore_index=-1)],
        scores + labels3, [vi("y", F32, None)])
    m["nll"] = model([node("NegativeLogLikelihoodLoss", ["s", "t", "w"], ["y"], name="nll")],
                     scores + labels3 + [vi("w", F32, [4])], [vi("y", F32, None)])
    m["nll_bad_target"] = model([node("NegativeLogLikelihoodLoss", ["s", "t"], ["y"], name="nll")],
                                scores + [vi("t", I64, [3, 4])], [vi("y", F32, None)])
    m["nll_bad_reduction"] = model(
        [node("NegativeLogLikelihoodLoss", ["s", "t"], ["y"], name="nll", reduction="max")],
        scores + labels3, [vi("y", F32, None)])
    m["size"] = model([node("Size", ["s"], ["y"])], scores, [vi("y", I64, None)])
    m["castlike"] = model([node("CastLike", ["s", "d"], ["y"])], scores + [vi("d", TensorProto.DOUBLE, [1])],
                          [vi("y", TensorProto.DOUBLE, None)])
    img = [vi("img", F32, [1, 8, 2, 3])]
    m["depth_to_space"] = model([node("DepthToSpace", ["img"], ["y"], blocksize=2)], img, y)
    m["depth_to_space_mode"] = model(
        [node("DepthToSpace", ["img"], ["y"], name="d2s", blocksize=2, mode="XYZ")], img, y)
    m["depth_to_space_channels"] = model(
        [node("DepthToSpace", ["img"], ["y"], name="d2s", blocksize=3)], img, y)
    m["space_to_depth_odd"] = model(
        [node("SpaceToDepth", ["img"], ["y"], name="s2d", blocksize=2)], img, y)
    m["cumsum"] = model([node("CumSum", ["x", "ax"], ["y"], exclusive=1)], x, y,
                        inits=[ints("ax", 1)])
    m["onehot_values"] = model([node("OneHot", ["t", "depth", "vals"], ["y"], name="oh")],
                               [vi("t", I64, [3])], y,
                               inits=[ints("depth", 4),
                                      numpy_helper.from_array(np.zeros(3, np.float32), "vals")])
    m["xor_float"] = model([node("Xor", ["x", "x"], ["y"], name="xor")], x, y)
    m["eyelike"] = model([node("EyeLike", ["x"], ["y"], k=1)], x, y)
    topk_out = [vi("v", F32, None), vi("i", I64, None)]
    m["topk"] = model([node("TopK", ["x", "k"], ["v", "i"], name="top", largest=0, sorted=0)],
                      x, topk_out, inits=[ints("k", [2])])
    m["topk_k_input"] = model([node("TopK", ["x", "k"], ["v", "i"], name="top")],
                              x + [vi("k", I64, [1])], topk_out)
    m["topk_k_too_big"] = model([node("TopK", ["x", "k"], ["v", "i"], name="top", axis=0)],
                                x, topk_out, inits=[ints("k", [3])])
    m["topk_bool"] = model([node("TopK", ["b", "k"], ["v", "i"], name="top")],
                           [vi("b", BOOL, [3])], [vi("v", BOOL, None), vi("i", I64, None)],
                           inits=[ints("k", [1])])
    m["reducelogsumexp"] = model([node("ReduceLogSumExp", ["x"], ["y"], axes=[1], keepdims=0)], x, y)
    m["instancenorm"] = model([node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)],
                              [vi("x", F32, [2, 3, 4, 5])], y, inits=[floats("s", [3]), floats("b", [3])])
    m["instancenorm_bad_scale"] = model([node("InstanceNormalization", ["x", "s", "b"], ["y"])],
                                        [vi("x", F32, [2, 3, 4])], y,
                                        inits=[floats("s", [4]), floats("b", [3])])
    m["tile"] = model([node("Tile", ["x", "r"], ["y"])], x, y, inits=[ints("r", [2, 1])])
    m["tile_bad"] = model([node("Tile", ["x", "r"], ["y"])], x, y, inits=[ints("r", [2])])

    ab = [vi("a", I64, [4]), vi("b", I64, [4])]
    m["mod_int"] = model([node("Mod", ["a", "b"], ["y"])], ab, [vi("y", I64, None)])
    m["mod_folded"] = model([node("Mod", ["a", "b"], ["y"])], [], [vi("y", I64, None)],
                            inits=[ints("a", [7, -7, 7, -7]), ints("b", [3, 3, -3, -3])])
    m["mod_fmod_folded"] = model([node("Mod", ["a", "b"], ["y"], fmod=1)], [], [vi("y", I64, None)],
                                 inits=[ints("a", [7, -7, 7, -7]), ints("b", [3, 3, -3, -3])])
    m["mod_float"] = model([node("Mod", ["a", "b"], ["y"], fmod=1)],
                           [vi("a", F32, [8]), vi("b", F32, [8])], [vi("y", F32, None)])
    m["mod_float_folded"] = model(
        [node("Constant", [], ["a"], value=numpy_helper.from_array(
            np.array([7.5, -7.5, 1e10, 3.0], np.float32))),
         node("Constant", [], ["b"], value=numpy_helper.from_array(
             np.array([2.0, 2.0, 3.0, np.inf], np.float32))),
         node("Mod", ["a", "b"], ["y"], fmod=1)], [], [vi("y", F32, None)])
    m["mod_by_zero"] = model([node("Mod", ["a", "b"], ["y"])], [vi("a", I64, [4])], [vi("y", I64, None)],
                             inits=[ints("b", [3, 0, 1, 2])])
    m["argmax_empty"] = model([node("ArgMax", ["e"], ["y"], axis=0)], [vi("e", F32, [0, 3])],
                              [vi("y", I64, None)])
    m["mod_float_no_fmod"] = model([node("Mod", ["a", "b"], ["y"])],
                                   [vi("a", F32, [4]), vi("b", F32, [4])], y)
    m["scatternd"] = model(
        [node("Constant", [], ["d"], value=numpy_helper.from_array(np.zeros((2, 3), np.float32))),
         node("Constant", [], ["u"], value=numpy_helper.from_array(np.array([5, 6], np.float32))),
         node("ScatterND", ["d", "i", "u"], ["y"])], [], y, inits=[ints("i", [[1, 2], [0, 0]])])
    # Float initializers are trainable parameters: not folded.
    m["scatternd_params"] = model([node("ScatterND", ["d", "i", "u"], ["y"])], [], y,
                                  inits=[numpy_helper.from_array(np.zeros((2, 3), np.float32), "d"),
                                         ints("i", [[1, 2], [0, 0]]),
                                         numpy_helper.from_array(np.array([5, 6], np.float32), "u")])
    m["scatternd_computed"] = model([node("ScatterND", ["x", "i", "u"], ["y"])], x, y,
                                    inits=[ints("i", [[1]]),
                                           numpy_helper.from_array(np.ones((1, 3), np.float32), "u")])
    m["scatternd_runtime_indices"] = model(
        [node("ScatterND", ["x", "i", "u"], ["y"])], x + [vi("i", I64, [1, 1]), vi("u", F32, [1, 3])], y)
    m["scatternd_computed_mul"] = model(
        [node("ScatterND", ["x", "i", "u"], ["y"], name="snd", reduction="mul")], x, y,
        inits=[ints("i", [[1]]), numpy_helper.from_array(np.ones((1, 3), np.float32), "u")],
        opset=18)
    m["gathernd"] = model([node("GatherND", ["x", "i"], ["y"])], x + [vi("i", I64, [2, 1])], y)
    m["gathernd_batch"] = model([node("GatherND", ["x", "i"], ["y"], name="gnd", batch_dims=1)],
                                x, y, inits=[ints("i", [[2], [0]])])
    m["gathernd_bad"] = model([node("GatherND", ["x", "i"], ["y"], name="gnd")], x, y,
                              inits=[ints("i", [[0, 1, 2]])])
    m["scatternd_bad_reduction"] = model(
        [node("ScatterND", ["d", "i", "u"], ["y"], reduction="sum")], [], y,
        inits=[numpy_helper.from_array(np.zeros((2, 3), np.float32), "d"), ints("i", [[1]]),
               numpy_helper.from_array(np.ones((1, 3), np.float32), "u")], opset=18)
    return m


@group
def recurrent():
    """RNN, GRU and LSTM, unrolled at import (ImportRecurrent.cpp)."""
    m = {}
    T, B, I, H = 3, 2, 4, 5

    def rnn(op, gates, d=1, x_shape=(T, B, I), inputs=("x", "w", "r", "b"), inits=None,
            extra_inputs=(), outputs=("y", "y_h"), opset=17, **attrs):
        inits = list(inits) if inits is not None else [
            floats("w", [d, gates * H, I], 1), floats("r", [d, gates * H, H], 2),
            floats("b", [d, 2 * gates * H], 3)]
        graph_inputs = [vi("x", F32, list(x_shape))] + list(extra_inputs)
        return model([node(op, list(inputs), list(outputs), name="rec", **attrs)], graph_inputs,
                     [vi(o, F32, None) for o in outputs if o], inits=inits, opset=opset)
    m["lstm"] = rnn("LSTM", 4, hidden_size=H, outputs=("y", "y_h", "y_c"))
    m["lstm_peephole_layout1"] = rnn(
        "LSTM", 4, x_shape=(B, T, I), inputs=("x", "w", "r", "b", "", "h0", "c0", "p"),
        inits=[floats("w", [1, 4 * H, I], 1), floats("r", [1, 4 * H, H], 2),
               floats("b", [1, 8 * H], 3), floats("p", [1, 3 * H], 4)],
        extra_inputs=[vi("h0", F32, [B, 1, H]), vi("c0", F32, [B, 1, H])], outputs=("y",),
        layout=1, opset=14)
    m["gru"] = rnn("GRU", 3, outputs=("", "y_h"))
    m["gru_lbr"] = rnn("GRU", 3, inputs=("x", "w", "r", "b", "", "h0"),
                       extra_inputs=[vi("h0", F32, [1, B, H])], outputs=("", "y_h"),
                       linear_before_reset=1)
    m["rnn_bidirectional"] = rnn("RNN", 1, d=2, direction="bidirectional",
                                 activations=["Relu", "LeakyRelu"], activation_alpha=[0.25])
    m["rnn_seq_lens_full"] = rnn("RNN", 1, inputs=("x", "w", "r", "b", "lens"),
                                 inits=[floats("w", [1, H, I], 1), floats("r", [1, H, H], 2),
                                        floats("b", [1, 2 * H], 3),
                                        numpy_helper.from_array(np.array([T, T], np.int32), "lens")])
    # Errors, each naming the node.
    m["lstm_seq_lens_short"] = rnn("LSTM", 4, inputs=("x", "w", "r", "b", "lens"),
                                   inits=[floats("w", [1, 4 * H, I], 1), floats("r", [1, 4 * H, H], 2),
                                          floats("b", [1, 8 * H], 3),
                                          numpy_helper.from_array(np.array([3, 2], np.int32), "lens")])
    m["lstm_seq_lens_input"] = rnn("LSTM", 4, inputs=("x", "w", "r", "b", "lens"),
                                   extra_inputs=[vi("lens", I32, [B])])
    m["lstm_seq_lens_float"] = rnn("LSTM", 4, inputs=("x", "w", "r", "b", "lens"),
                                   extra_inputs=[vi("lens", F32, [B])])
    m["lstm_seq_lens_shape"] = rnn("LSTM", 4, inputs=("x", "w", "r", "b", "lens"),
                                   extra_inputs=[vi("lens", I32, [B + 1])])
    m["lstm_seq_lens_too_long"] = rnn(
        "LSTM", 4, inputs=("x", "w", "r", "b", "lens"),
        inits=[floats("w", [1, 4 * H, I], 1), floats("r", [1, 4 * H, H], 2),
               floats("b", [1, 8 * H], 3), numpy_helper.from_array(np.array([4, 2], np.int32), "lens")])
    m["lstm_input_forget"] = rnn("LSTM", 4, input_forget=1)
    m["rnn_bad_activation"] = rnn("RNN", 1, activations=["Gelu"])
    m["gru_activation_count"] = rnn("GRU", 3, activations=["Sigmoid"])
    m["rnn_alpha_left_over"] = rnn("RNN", 1, activations=["Tanh"], activation_alpha=[0.5])
    m["lstm_bad_direction"] = rnn("LSTM", 4, direction="both")
    m["gru_bad_w"] = rnn("GRU", 3, inits=[floats("w", [1, 3 * H, I + 1], 1),
                                          floats("r", [1, 3 * H, H], 2), floats("b", [1, 6 * H], 3)])
    m["gru_hidden_mismatch"] = rnn("GRU", 3, hidden_size=H + 1)
    m["rnn_bidirectional_one_w"] = rnn("RNN", 1, direction="bidirectional")
    m["lstm_int"] = model([node("LSTM", ["x", "w", "r"], ["y"], name="rec")], [vi("x", I32, [T, B, I])],
                          [vi("y", I32, None)], inits=[ints("w", np.zeros([1, 4 * H, I])),
                                                       ints("r", np.zeros([1, 4 * H, H]))])
    m["lstm_bad_h0"] = rnn("LSTM", 4, inputs=("x", "w", "r", "b", "", "h0"),
                           extra_inputs=[vi("h0", F32, [1, B + 1, H])])
    return m


@group
def linalg():
    m = {}
    m["matmul"] = model([node("MatMul", ["a", "w"], ["y"])], [vi("a", F32, [4, 8])],
                        [vi("y", F32, None)], [floats("w", [8, 5])])
    m["matmul_batched"] = model([node("MatMul", ["a", "b"], ["y"])],
                                [vi("a", F32, [2, 1, 4, 8]), vi("b", F32, [3, 8, 5])],
                                [vi("y", F32, None)])
    m["matmul_vec_mat"] = model([node("MatMul", ["a", "b"], ["y"])],
                                [vi("a", F32, [8]), vi("b", F32, [2, 8, 5])], [vi("y", F32, None)])
    m["matmul_mat_vec"] = model([node("MatMul", ["a", "b"], ["y"])],
                                [vi("a", F32, [4, 8]), vi("b", F32, [8])], [vi("y", F32, None)])
    m["matmul_vec_vec"] = model([node("MatMul", ["a", "b"], ["y"])],
                                [vi("a", F32, [8]), vi("b", F32, [8])], [vi("y", F32, None)])
    m["gemm"] = model([node("Gemm", ["a", "w", "c"], ["y"], transB=1, alpha=0.5, beta=2.0)],
                      [vi("a", F32, [4, 8])], [vi("y", F32, None)],
                      [floats("w", [5, 8]), floats("c", [5], 1)])
    m["gemm_plain"] = model([node("Gemm", ["a", "b"], ["y"], transA=1)],
                            [vi("a", F32, [8, 4]), vi("b", F32, [8, 5])], [vi("y", F32, None)])
    x = [vi("x", F32, [1, 3, 7, 7])]
    m["conv"] = model([node("Conv", ["x", "w", "bias"], ["y"], pads=[1, 1, 1, 1], strides=[2, 2])],
                      x, [vi("y", F32, None)], [floats("w", [4, 3, 3, 3]), floats("bias", [4], 1)])
    m["conv_same_upper"] = model([node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])],
                                 x, [vi("y", F32, None)], [floats("w", [4, 3, 2, 2])])
    m["conv_same_lower"] = model([node("Conv", ["x", "w"], ["y"], auto_pad="SAME_LOWER", strides=[2, 2])],
                                 x, [vi("y", F32, None)], [floats("w", [4, 3, 2, 2])])
    m["conv_valid_group"] = model([node("Conv", ["x", "w"], ["y"], auto_pad="VALID", group=3,
                                        dilations=[2, 2], pads=[5, 5, 5, 5])],
                                  x, [vi("y", F32, None)], [floats("w", [6, 1, 3, 3])])
    m["maxpool"] = model([node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                               pads=[1, 1, 1, 1], ceil_mode=1)], x, [vi("y", F32, None)])
    m["maxpool_same"] = model([node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2],
                                    auto_pad="SAME_UPPER")], x, [vi("y", F32, None)])
    m["avgpool"] = model([node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], pads=[0, 0, 1, 1],
                               count_include_pad=1, dilations=[1, 1])],
                         x, [vi("y", F32, None)], opset=19)
    m["global_avgpool"] = model([node("GlobalAveragePool", ["x"], ["y"])], x, [vi("y", F32, None)])
    m["global_maxpool"] = model([node("GlobalMaxPool", ["x"], ["y"])], x, [vi("y", F32, None)])
    # Unsupported uses.
    m["maxpool_storage_order"] = model([node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2],
                                             storage_order=1)], x, [vi("y", F32, None)])
    m["maxpool_indices"] = model([node("MaxPool", ["x"], ["y", "idx"], kernel_shape=[2, 2])],
                                 x, [vi("y", F32, None), vi("idx", I64, None)])
    m["maxpool_uint8"] = model([node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])],
                               [vi("x", TensorProto.UINT8, [1, 1, 5, 5])],
                               [vi("y", TensorProto.UINT8, None)])
    m["avgpool_dilated"] = model([node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2],
                                       dilations=[2, 2])], x, [vi("y", F32, None)], opset=19)
    m["conv_bad_autopad"] = model([node("Conv", ["x", "w"], ["y"], auto_pad="SAME_MIDDLE")],
                                  x, [vi("y", F32, None)], [floats("w", [4, 3, 2, 2])])
    return m


@group
def neuralnet():
    m = {}
    x4 = [vi("x", F32, [2, 3, 4, 4])]
    m["batchnorm"] = model([node("BatchNormalization", ["x", "s", "b", "mean", "var"], ["y"],
                                 epsilon=1e-3, momentum=0.8)], x4, [vi("y", F32, None)],
                           [floats("s", [3]), floats("b", [3], 1), floats("mean", [3], 2),
                            numpy_helper.from_array(np.ones(3, np.float32), "var")], opset=15)
    m["batchnorm_training"] = model([node("BatchNormalization", ["x", "s", "b", "mean", "var"],
                                          ["y"], training_mode=1)], x4, [vi("y", F32, None)],
                                    [floats("s", [3]), floats("b", [3], 1), floats("mean", [3], 2),
                                     floats("var", [3], 3)], opset=15)
    stats = [floats("s", [3]), floats("b", [3], 1), floats("mean", [3], 2),
             numpy_helper.from_array(np.full(3, 1.5, np.float32), "var")]
    m["batchnorm_training_outputs"] = model(
        [node("BatchNormalization", ["x", "s", "b", "mean", "var"], ["y", "rm", "rv"],
              training_mode=1, momentum=0.8)], x4,
        [vi("y", F32, None), vi("rm", F32, None), vi("rv", F32, None)], stats, opset=15)
    # Opset 13 (BatchNormalization-9): training mode is the extra outputs,
    # as PyTorch's training export writes all five.
    m["batchnorm_opset13_training"] = model(
        [node("BatchNormalization", ["x", "s", "b", "mean", "var"],
              ["y", "rm", "rv", "sm", "sv"])], x4, [vi("y", F32, None)], stats, opset=13)
    m["batchnorm_opset13_saved"] = model(
        [node("BatchNormalization", ["x", "s", "b", "mean", "var"],
              ["y", "rm", "rv", "sm", "sv"])], x4,
        [vi("y", F32, None), vi("sm", F32, None)], stats, opset=13)
    m["batchnorm_running_out"] = model(
        [node("BatchNormalization", ["x", "s", "b", "mean", "var"], ["y", "rm"])], x4,
        [vi("y", F32, None), vi("rm", F32, None)], stats, opset=15)
    m["batchnorm_mode2"] = model(
        [node("BatchNormalization", ["x", "s", "b", "mean", "var"], ["y"], training_mode=2)],
        x4, [vi("y", F32, None)], stats, opset=15)
    # Training steps: a scalar output to train, BatchNorm1d's [N, C] form.
    x2 = [vi("x", F32, [5, 3])]
    m["batchnorm_training_loss"] = model(
        [node("BatchNormalization", ["x", "s", "b", "mean", "var"], ["y"], training_mode=1,
              momentum=0.75),
         node("ReduceSumSquare", ["y"], ["loss"], keepdims=0)], x2,
        [vi("loss", F32, [])], stats, opset=15)
    m["batchnorm_training_one_row"] = model(
        [node("BatchNormalization", ["x", "s", "b", "mean", "var"], ["y"], training_mode=1),
         node("ReduceSumSquare", ["y"], ["loss"], keepdims=0)],
        [vi("x", F32, [1, 3])], [vi("loss", F32, [])], stats, opset=15)
    m["batchnorm_training_shared"] = model(
        [node("BatchNormalization", ["x", "s", "b", "mean", "var"], ["h"], training_mode=1),
         node("BatchNormalization", ["h", "s", "b", "mean", "var"], ["y"], training_mode=1),
         node("ReduceSumSquare", ["y"], ["loss"], keepdims=0)], x2,
        [vi("loss", F32, [])], stats, opset=15)
    x3 = [vi("x", F32, [2, 5, 8])]
    m["layernorm"] = model([node("LayerNormalization", ["x", "s", "b"], ["y"], epsilon=1e-5)],
                           x3, [vi("y", F32, None)], [floats("s", [8]), floats("b", [8], 1)])
    m["layernorm_axis"] = model([node("LayerNormalization", ["x", "s"], ["y"], axis=-2)],
                                x3, [vi("y", F32, None)], [floats("s", [1, 8])])
    m["layernorm_mean_out"] = model([node("LayerNormalization", ["x", "s"], ["y", "mean"])],
                                    x3, [vi("y", F32, None), vi("mean", F32, None)],
                                    [floats("s", [8])])
    m["softmax"] = unary_model("Softmax", shape=(2, 3, 4), axis=-2)
    m["logsoftmax"] = unary_model("LogSoftmax", shape=(2, 3))
    scores = [vi("scores", F32, [4, 5]), vi("labels", I64, [4])]
    m["sce"] = model([node("SoftmaxCrossEntropyLoss", ["scores", "labels"], ["loss"],
                           reduction="mean", ignore_index=-100)],
                     scores, [vi("loss", F32, None)])
    m["sce_logprob"] = model([node("SoftmaxCrossEntropyLoss", ["scores", "labels", "w"],
                                   ["loss", "logp"], reduction="none")],
                             scores, [vi("loss", F32, None), vi("logp", F32, None)],
                             [floats("w", [5])])
    # Reductions: axes as an attribute (ReduceMean/Max before 18), as an input.
    m["reducemean_attr"] = model([node("ReduceMean", ["x"], ["y"], axes=[-1, 1], keepdims=0)],
                                 x4, [vi("y", F32, None)], opset=13)
    m["reducemean_input"] = model([node("ReduceMean", ["x", "axes"], ["y"])],
                                  x4, [vi("y", F32, None)], [ints("axes", [2, 3])], opset=18)
    m["reducemax_attr"] = model([node("ReduceMax", ["x"], ["y"], axes=[0])],
                                x4, [vi("y", F32, None)], opset=17)
    m["reducemax_all"] = model([node("ReduceMax", ["x"], ["y"], keepdims=0)],
                               x4, [vi("y", F32, None)], opset=18)
    m["reducesum_input"] = model([node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
                                 x4, [vi("y", F32, None)], [ints("axes", [1])], opset=13)
    m["reducesum_noop"] = model([node("ReduceSum", ["x"], ["y"], noop_with_empty_axes=1)],
                                x4, [vi("y", F32, None)], opset=13)
    m["reducesum_dup_axes"] = model([node("ReduceSum", ["x", "axes"], ["y"])],
                                    x4, [vi("y", F32, None)], [ints("axes", [1, -3])], opset=13)
    return m


@group
def shape_ops():
    m = {}
    x = [vi("x", F32, [2, 3, 4])]
    y = [vi("y", F32, None)]
    m["reshape"] = model([node("Reshape", ["x", "s"], ["y"])], x, y, [ints("s", [0, -1])])
    m["reshape_allowzero"] = model([node("Reshape", ["x", "s"], ["y"], allowzero=1)],
                                   [vi("x", F32, [0, 3])], y, [ints("s", [3, 0])], opset=14)
    m["reshape_bad"] = model([node("Reshape", ["x", "s"], ["y"])], x, y, [ints("s", [5, -1])])
    m["reshape_dynamic"] = model([node("Reshape", ["x", "s"], ["y"])],
                                 x + [vi("s", I64, [2])], y)
    m["flatten"] = model([node("Flatten", ["x"], ["y"], axis=-1)], x, y)
    m["flatten0"] = model([node("Flatten", ["x"], ["y"], axis=0)], x, y)
    m["squeeze"] = model([node("Squeeze", ["x", "axes"], ["y"])], [vi("x", F32, [1, 3, 1, 4])], y,
                         [ints("axes", [-2])], opset=13)
    m["squeeze_all"] = model([node("Squeeze", ["x"], ["y"])], [vi("x", F32, [1, 3, 1, 4])], y,
                             opset=13)
    m["squeeze_bad"] = model([node("Squeeze", ["x", "axes"], ["y"])], x, y, [ints("axes", [1])])
    m["unsqueeze"] = model([node("Unsqueeze", ["x", "axes"], ["y"])], x, y,
                           [ints("axes", [0, -1])], opset=13)
    m["transpose"] = model([node("Transpose", ["x"], ["y"], perm=[2, 0, 1])], x, y)
    m["transpose_default"] = model([node("Transpose", ["x"], ["y"])], x, y)
    m["concat"] = model([node("Concat", ["x", "x2"], ["y"], axis=-2)],
                        x + [vi("x2", F32, [2, 5, 4])], y)
    outs3 = [vi("y0", F32, None), vi("y1", F32, None), vi("y2", F32, None)]
    m["split_sizes"] = model([node("Split", ["x", "s"], ["y0", "y1"], axis=2)], x,
                             outs3[:2], [ints("s", [1, 3])], opset=13)
    m["split_equal"] = model([node("Split", ["x"], ["y0", "y1"], axis=-1)], x, outs3[:2], opset=13)
    m["split_num_outputs"] = model([node("Split", ["x"], ["y0", "y1", "y2"], axis=2,
                                         num_outputs=3)], x, outs3, opset=18)
    m["split_uneven"] = model([node("Split", ["x"], ["y0", "y1", "y2"], axis=2)], x, outs3,
                              opset=13)
    m["slice"] = model([node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], x, y,
                       [ints("st", [1, -1]), ints("en", [INT_MAX, -INT_MAX - 1]),
                        ints("ax", [-1, 1]), ints("sp", [2, -1])])
    m["slice_default_axes"] = model([node("Slice", ["x", "st", "en"], ["y"])], x, y,
                                    [ints("st", [1, 0]), ints("en", [2, 100])])
    m["slice_empty"] = model([node("Slice", ["x", "st", "en"], ["y"])], x, y,
                             [ints("st", [5]), ints("en", [7])])
    m["gather"] = model([node("Gather", ["emb", "ids"], ["y"])], [vi("ids", I64, [2, 5])], y,
                        [floats("emb", [10, 4])])
    m["gather_axis"] = model([node("Gather", ["x", "i"], ["y"], axis=-1)], x, y,
                             [ints("i", [3, -1, 0])])
    m["gather_oob"] = model([node("Gather", ["x", "i"], ["y"], axis=1)], x, y, [ints("i", [3])])
    m["expand"] = model([node("Expand", ["x", "s"], ["y"])], [vi("x", F32, [3, 1])], y,
                        [ints("s", [2, 1, 4])])
    m["expand_noop"] = model([node("Expand", ["x", "s"], ["y"])], x, y, [ints("s", [1, 1])])
    m["trilu"] = model([node("Trilu", ["x", "k"], ["y"], upper=0)], x, y, [ints("k", 1)])
    m["trilu_default"] = model([node("Trilu", ["x"], ["y"])], x, y)
    m["trilu_dynamic_k"] = model([node("Trilu", ["x", "k"], ["y"])], x + [vi("k", I64, [])], y)
    return m


@group
def constants():
    m = {}
    y = [vi("y", F32, None)]
    tensor = numpy_helper.from_array(np.array([[1.5, 2.0]], np.float32))
    m["constant"] = model([node("Constant", [], ["y"], value=tensor)], [], y)
    m["constant_float"] = model([node("Constant", [], ["y"], value_float=0.1)], [], y)
    m["constant_ints"] = model([node("Constant", [], ["y"], value_ints=[3, 4])], [],
                               [vi("y", I64, None)])
    m["constant_string"] = model([node("Constant", [], ["y"], value_string="hi")], [],
                                 [vi("y", TensorProto.STRING, None)])
    m["constantofshape"] = model(
        [node("ConstantOfShape", ["s"], ["y"],
              value=numpy_helper.from_array(np.array([7], np.int64)))],
        [], [vi("y", I64, None)], [ints("s", [2, 3])])
    m["constantofshape_default"] = model([node("ConstantOfShape", ["s"], ["y"])], [], y,
                                         [ints("s", [4])])
    x = [vi("x", F32, [2, 3, 4, 5])]
    m["shape"] = model([node("Shape", ["x"], ["y"])], x, [vi("y", I64, None)])
    m["shape_slice"] = model([node("Shape", ["x"], ["y"], start=1, end=-1)], x,
                             [vi("y", I64, None)], opset=15)
    m["range"] = model([node("Range", ["a", "b", "c"], ["y"])], [], [vi("y", I64, None)],
                       [ints("a", 10), ints("b", 1), ints("c", -3)])
    m["range_float"] = model([node("Constant", [], ["a"], value_float=0.0),
                              node("Constant", [], ["b"], value_float=1.0),
                              node("Constant", [], ["c"], value_float=0.25),
                              node("Range", ["a", "b", "c"], ["y"])], [], y)
    m["identity"] = model([node("Identity", ["x"], ["y"])], x, y)
    m["dropout"] = model([node("Dropout", ["x", "r"], ["y", "mask"])], x,
                         [vi("y", F32, None), vi("mask", BOOL, None)],
                         [numpy_helper.from_array(np.array(0.5, np.float32), "r")])
    m["dropout_training"] = model(
        [node("Dropout", ["x", "", "t"], ["y"])], x, y,
        [numpy_helper.from_array(np.array(True), "t")])
    # Two training-mode dropouts with a scalar loss to train: streams 0 and
    # 1, one step counter; a seed attribute; a bad ratio.
    m["dropout_training_two"] = model(
        [node("Mul", ["x", "w"], ["xw"]),
         node("Dropout", ["xw", "r", "t"], ["h", "hm"], seed=77),
         node("Dropout", ["h", "r2", "t"], ["y"]),
         node("ReduceSumSquare", ["y"], ["loss"], keepdims=0)], x,
        [vi("loss", F32, []), vi("hm", BOOL, None)],
        [numpy_helper.from_array(np.array(0.25, np.float32), "r"),
         numpy_helper.from_array(np.array(0.125, np.float32), "r2"),
         numpy_helper.from_array(np.array(True), "t"), floats("w", [5])])
    m["dropout_training_ratio1"] = model(
        [node("Dropout", ["x", "r", "t"], ["y"])], x, y,
        [numpy_helper.from_array(np.array(1.0, np.float32), "r"),
         numpy_helper.from_array(np.array(True), "t")])
    # PyTorch's dropout=0.0 in training mode: nothing is dropped.
    m["dropout_training_ratio0"] = model(
        [node("Dropout", ["x", "r", "t"], ["y"])], x, y,
        [numpy_helper.from_array(np.array(0.0, np.float32), "r"),
         numpy_helper.from_array(np.array(True), "t")])
    return m


@group
def shape_chain():
    """What torch.onnx.export emits for x.reshape(x.size(0), -1)."""
    m = {}
    nodes = [
        node("Shape", ["x"], ["shape"]),
        node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0, np.int64))),
        node("Gather", ["shape", "zero"], ["batch"], axis=0),
        node("Unsqueeze", ["batch", "axes"], ["batch1"]),
        node("Constant", [], ["minus1"], value=numpy_helper.from_array(np.array([-1], np.int64))),
        node("Concat", ["batch1", "minus1"], ["target"], axis=0),
        node("Reshape", ["x", "target"], ["y"]),
    ]
    m["chain"] = model(nodes, [vi("x", F32, ["batch", 3, 4])], [vi("y", F32, None)],
                       [ints("axes", [0])])
    # Arithmetic on shapes: reshape to (batch, 3, 2, 2) with 4 / 2 computed.
    nodes = [
        node("Shape", ["x"], ["shape"]),
        node("Slice", ["shape", "st", "en"], ["lead"]),
        node("Gather", ["shape", "two"], ["last"], axis=0),
        node("Div", ["last", "two"], ["half"]),
        node("Unsqueeze", ["half", "axes"], ["half1"]),
        node("Concat", ["lead", "half1", "half1"], ["target"], axis=0),
        node("Reshape", ["x", "target"], ["y"]),
    ]
    m["chain_arith"] = model(nodes, [vi("x", F32, [5, 3, 4])], [vi("y", F32, None)],
                             [ints("st", [0]), ints("en", [2]), ints("two", 2), ints("axes", [0])])
    return m


@group
def initializers():
    m = {}
    w = helper.make_tensor("w", F32, [2, 2], [1.0, 2.0, 3.0, 4.0])  # float_data
    h = helper.make_tensor("h", F16, [2], np.array([1.0, 2.0], np.float16).view(np.uint16).tolist())
    i = helper.make_tensor("i", I64, [2], [1, 1])  # int64_data
    b = helper.make_tensor("b", BOOL, [2], [1, 0])  # int32_data
    r = numpy_helper.from_array(np.array([5, 6], np.int32), "r")  # raw_data
    d = helper.make_tensor("d", TensorProto.DOUBLE, [1], [0.5])  # double_data
    unused = floats("unused", [3])
    nodes = [
        node("Add", ["x", "w"], ["s0"]),
        node("Reshape", ["s0", "i4"], ["s1"]),
        node("Cast", ["h"], ["h32"], to=F32),
        node("Add", ["s1", "h32"], ["s2"]),
        node("Cast", ["r"], ["r32"], to=F32),
        node("Mul", ["s2", "r32"], ["s3"]),
        node("Where", ["b", "s3", "s2"], ["s4"]),
        node("Cast", ["d"], ["d32"], to=F32),
        node("Add", ["s4", "d32"], ["y"]),
        node("Identity", ["i"], ["iy"]),
    ]
    # "w" is also listed as a graph input: it stays a parameter.
    m["inits"] = model(nodes, [vi("x", F32, [2, 2]), vi("w", F32, [2, 2])],
                       [vi("y", F32, None), vi("iy", I64, None)],
                       [w, h, i, b, r, d, unused, ints("i4", [2, 2])])
    bad = onnx.TensorProto(name="w", data_type=F32, dims=[2, 3], float_data=[1.0, 2.0])
    m["short_data"] = model([node("Add", ["x", "w"], ["y"])], [vi("x", F32, [2, 3])],
                            [vi("y", F32, None)], [bad])
    raw = numpy_helper.from_array(np.zeros([2, 2], np.float32), "w")
    raw.raw_data = raw.raw_data[:10]
    m["short_raw"] = model([node("Add", ["x", "w"], ["y"])], [vi("x", F32, [2, 2])],
                           [vi("y", F32, None)], [raw])
    s = helper.make_tensor("s", TensorProto.STRING, [1], [b"hello"])
    m["string_init"] = model([node("Identity", ["s"], ["y"])], [], [vi("y", TensorProto.STRING, None)], [s])
    m["uint16_input"] = model([node("Identity", ["x"], ["y"])], [vi("x", TensorProto.UINT16, [2])],
                              [vi("y", TensorProto.UINT16, None)])
    return m


@group
def errors():
    m = {}
    y = [vi("y", F32, None)]
    x = [vi("x", F32, [2, 3])]
    m["unsupported"] = model([node("Foo", ["x"], ["a"], name="n1"), node("Relu", ["a"], ["b"]),
                              node("Bar", ["b"], ["c"], name="n7", domain="com.microsoft"),
                              node("Relu", ["c"], ["y"], name="")], x, y)
    m["opset12"] = model([node("Relu", ["x"], ["y"])], x, y, opset=12)
    m["opset22"] = model([node("Relu", ["x"], ["y"])], x, y, opset=22)
    m["opset13"] = model([node("Relu", ["x"], ["y"])], x, y, opset=13)
    m["opset21"] = model([node("Relu", ["x"], ["y"], domain="ai.onnx")], x, y, opset=21)
    m["symbolic"] = model([node("Add", ["x", "z"], ["y"])],
                          [vi("x", F32, ["batch", 3]), vi("z", F32, [2, None])], y)
    m["no_shape"] = model([node("Relu", ["x"], ["y"])], [helper.make_tensor_value_info("x", F32, None)], y)
    m["undefined_input"] = model([node("Relu", ["nowhere"], ["y"])], [], y)
    m["undefined_output"] = model([node("Relu", ["x"], ["y"])], x, y + [vi("z", F32, None)])
    m["no_graph"] = onnx.ModelProto(ir_version=8)
    return m


@group
def external():
    """External data: good, missing, escaping, too short (side files written)."""
    m = {}
    data = np.arange(6, dtype=np.float32)

    def ext_model(location, offset=None, length=None):
        t = onnx.TensorProto(name="w", data_type=F32, dims=[2, 3])
        t.data_location = onnx.TensorProto.EXTERNAL
        for key, value in [("location", location), ("offset", offset), ("length", length)]:
            if value is not None:
                e = t.external_data.add()
                e.key, e.value = key, str(value)
        return model([node("Add", ["x", "w"], ["y"])], [vi("x", F32, [2, 3])],
                     [vi("y", F32, None)], [t])

    m["ext_good"] = ext_model("weights/w.bin", offset=8, length=24)
    m["ext_missing"] = ext_model("nothere.bin")
    m["ext_dotdot"] = ext_model("../outside.bin")
    m["ext_absolute"] = ext_model("/etc/passwd")
    m["ext_symlink"] = ext_model("link.bin")
    m["ext_short"] = ext_model("weights/w.bin", offset=16, length=24)
    m["ext_size_mismatch"] = ext_model("weights/w.bin", offset=0, length=20)
    return m, data


@group
def structure():
    """Structure-only import: float weights and an int64 shape stored as
    external data in NAME.onnx.data (side files written; the tests delete
    them)."""
    rng = np.random.default_rng(0)
    files = {}

    def externalize(model_name, tensors):
        """Moves `tensors` into MODEL_NAME.onnx.data, one after the other."""
        location = model_name + ".onnx.data"
        blob = b""
        for t in tensors:
            raw = t.raw_data if t.raw_data else numpy_helper.to_array(t).tobytes()
            t.ClearField("raw_data")
            t.ClearField("float_data")
            t.ClearField("int64_data")
            t.data_location = onnx.TensorProto.EXTERNAL
            for key, value in [("location", location), ("offset", len(blob)),
                               ("length", len(raw))]:
                e = t.external_data.add()
                e.key, e.value = key, str(value)
            blob += raw
        files[location] = blob

    m = {}
    w1 = numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "fc1.weight")
    w2 = numpy_helper.from_array(rng.standard_normal((8, 3)).astype(np.float32), "fc2.weight")
    externalize("so_mlp", [w1, w2])
    b1 = floats("fc1.bias", [8], seed=1)  # inline: read either way
    m["so_mlp"] = model(
        [node("MatMul", ["x", "fc1.weight"], ["h0"], name="fc1"),
         node("Add", ["h0", "fc1.bias"], ["h1"], name="fc1.bias_add"),
         node("Relu", ["h1"], ["h2"], name="relu"),
         node("MatMul", ["h2", "fc2.weight"], ["h3"], name="fc2"),
         node("Reshape", ["h3", "out_shape"], ["y"], name="flatten")],
        [vi("x", F32, [2, 4])], [vi("y", F32, None)],
        [w1, b1, w2, ints("out_shape", [6])])

    shape = ints("target_shape", [4, 2])
    externalize("so_shape", [shape])
    m["so_shape"] = model([node("Reshape", ["x", "target_shape"], ["y"], name="reshape")],
                          [vi("x", F32, [2, 4])], [vi("y", F32, None)], [shape])
    return m, files


def write_external_side_files(outdir, data):
    os.makedirs(os.path.join(outdir, "weights"), exist_ok=True)
    with open(os.path.join(outdir, "weights", "w.bin"), "wb") as f:
        f.write(b"\0" * 8 + data.tobytes())
    outside = os.path.join(os.path.dirname(os.path.abspath(outdir)), "outside.bin")
    with open(outside, "wb") as f:
        f.write(data.tobytes())
    link = os.path.join(outdir, "link.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(outside, link)


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for name in sys.argv[2:]:
        result = GROUPS[name]()
        if name == "external":
            result, data = result
            write_external_side_files(outdir, data)
        elif name == "structure":
            result, files = result
            for file_name, blob in files.items():
                with open(os.path.join(outdir, file_name), "wb") as f:
                    f.write(blob)
        for model_name, proto in result.items():
            with open(os.path.join(outdir, model_name + ".onnx"), "wb") as f:
                f.write(proto.SerializeToString())


if __name__ == "__main__":
    main()
