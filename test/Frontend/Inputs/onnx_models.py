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

from onnx_builders import (F32, F16, I64, I32, BOOL, INT_MAX, GROUPS, group, vi, ints,  # noqa: F401
                           floats, node, model, unary_model, binary_model)
import composed_models  # noqa: E402,F401  (registers the composed group)


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
    # Ops of numbers given a bool tensor.
    b = [vi("b", TensorProto.BOOL, [2, 3])]
    axis = helper.make_tensor("axis", TensorProto.INT64, [], [1])
    m["cumsum_bool"] = model([node("CumSum", ["b", "axis"], ["y"])], b, y, inits=[axis])
    m["shrink_bool"] = model([node("Shrink", ["b"], ["y"])], b, y)
    m["mod_bool"] = model([node("Mod", ["b", "b"], ["y"], fmod=1)], b, y)
    return m


@group
def control():
    """If whose condition is known at import time (a constant, or computed
    from shapes as torch.onnx.export writes `if x.dim() == 4`), and the errors
    of an If weft cannot take."""
    m = {}
    x = [vi("x", F32, [2, 3])]
    y = [vi("y", F32, None)]

    def branch(name, nodes, outputs, inits=()):
        return helper.make_graph(nodes, name, [], outputs, initializer=list(inits))

    # then: relu(x) * 2 (reads the outer x and an outer initializer);
    # else: neg(x).
    then_g = branch("then", [node("Relu", ["x"], ["t1"]), node("Mul", ["t1", "two"], ["t2"])],
                    [vi("t2", F32, None)])
    else_g = branch("else", [node("Neg", ["x"], ["e1"])], [vi("e1", F32, None)])
    two = numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two")
    for name, value in (("if_true", True), ("if_false", False)):
        cond = numpy_helper.from_array(np.array(value), "c")
        m[name] = model([node("Constant", [], ["cond"], value=cond),
                         node("If", ["cond"], ["y"], name="choose",
                              then_branch=then_g, else_branch=else_g)], x, y, inits=[two])
    # The condition from the input's shape: rank == 2 (torch's export of a
    # dim check), then a branch with its own initializer and two outputs.
    shape_nodes = [node("Shape", ["x"], ["s"]), node("Shape", ["s"], ["r"]),
                   node("Equal", ["r", "two_i"], ["is2"])]
    three = numpy_helper.from_array(np.array([3.0, 4.0, 5.0], dtype=np.float32), "w")
    then2 = branch("then2", [node("Add", ["x", "w"], ["a1"]), node("Relu", ["x"], ["a2"])],
                   [vi("a1", F32, None), vi("a2", F32, None)], inits=[three])
    else2 = branch("else2", [node("Neg", ["x"], ["b1"]), node("Neg", ["x"], ["b2"])],
                   [vi("b1", F32, None), vi("b2", F32, None)])
    m["if_shape"] = model(shape_nodes + [
        node("If", ["is2"], ["y", "z"], name="by_rank", then_branch=then2, else_branch=else2)],
        x, y + [vi("z", F32, None)], inits=[ints("two_i", [2])])
    # Nested: the taken branch holds another If.
    inner = branch("inner", [node("Constant", [], ["ic"],
                                  value=numpy_helper.from_array(np.array(False), "ic")),
                             node("If", ["ic"], ["o"], name="inner_if",
                                  then_branch=then_g, else_branch=else_g)],
                   [vi("o", F32, None)])
    cond = numpy_helper.from_array(np.array(True), "c")
    m["if_nested"] = model([node("Constant", [], ["cond"], value=cond),
                            node("If", ["cond"], ["y"], name="outer",
                                 then_branch=inner, else_branch=else_g)], x, y, inits=[two])
    # Errors: a condition that depends on the data; unsupported ops inside
    # the branches (listed with where they are, before anything is imported);
    # a branch with the wrong number of outputs; a branch output that
    # nothing produces; a condition of two elements.
    m["if_data"] = model([node("ReduceSum", ["x"], ["sum"], keepdims=0),
                          node("Less", ["sum", "zero"], ["neg"]),
                          node("If", ["neg"], ["y"], name="data_if",
                               then_branch=then_g, else_branch=else_g)],
                         x, y, inits=[two, numpy_helper.from_array(np.array(0.0, np.float32), "zero")])
    bad_then = branch("bad_then", [node("Foo", ["x"], ["f"], name="foo")], [vi("f", F32, None)])
    bad_else = branch("bad_else", [node("Bar", ["x"], ["g"], name="bar")], [vi("g", F32, None)])
    m["if_unsupported"] = model([node("Constant", [], ["cond"], value=cond),
                                 node("If", ["cond"], ["y"], name="choose",
                                      then_branch=bad_then, else_branch=bad_else),
                                 node("Baz", ["y"], ["w"], name="baz")], x, [vi("w", F32, None)])
    m["if_outputs"] = model([node("Constant", [], ["cond"], value=cond),
                             node("If", ["cond"], ["y", "z"], name="choose",
                                  then_branch=then_g, else_branch=else_g)],
                            x, y + [vi("z", F32, None)], inits=[two])
    m["if_missing_output"] = model(
        [node("Constant", [], ["cond"], value=cond),
         node("If", ["cond"], ["y"], name="choose",
              then_branch=branch("t", [], [vi("nowhere", F32, None)]), else_branch=else_g)], x, y)
    # An error inside the taken branch names the branch and its If.
    bad_node = branch("bad", [node("Sqrt", ["two_i"], ["q"], name="int_sqrt")],
                      [vi("q", F32, None)])
    m["if_branch_error"] = model([node("Constant", [], ["cond"], value=cond),
                                  node("If", ["cond"], ["y"], name="choose",
                                       then_branch=bad_node, else_branch=else_g)],
                                 x, y, inits=[ints("two_i", [2])])
    # Loop: a trip count and a carried value (y = y * 2 + i, three times) with
    # a scan output (each iteration's y); a while loop whose condition the
    # body computes from the iteration number (i + 1 < 2: two iterations);
    # and the errors.
    def body(cond_out_nodes, cond_name="cond_in"):
        nodes = [node("Cast", ["i"], ["fi"], to=F32), node("Mul", ["v", "two"], ["v2"]),
                 node("Add", ["v2", "fi"], ["v_out"]), node("Identity", ["v_out"], ["scan"])]
        return helper.make_graph(nodes + cond_out_nodes, "body",
                                 [vi("i", I64, []), vi(cond_name, BOOL, []), vi("v", F32, None)],
                                 [vi("cond_out", BOOL, []), vi("v_out", F32, None),
                                  vi("scan", F32, None)])
    keep = [node("Identity", ["cond_in"], ["cond_out"])]
    m["loop_count"] = model([node("Loop", ["M", "", "x"], ["y", "z"], name="loop", body=body(keep))],
                            x, y + [vi("z", F32, None)], inits=[two, ints("M", 3)])
    counted = [node("Add", ["i", "one"], ["i1"]), node("Less", ["i1", "bound"], ["cond_out"])]
    m["loop_while"] = model(
        [node("Constant", [], ["go"], value=numpy_helper.from_array(np.array(True), "go")),
         node("Loop", ["", "go", "x"], ["y", "z"], name="loop", body=body(counted))],
        x, y + [vi("z", F32, None)], inits=[two, ints("one", 1), ints("bound", 2)])
    data_cond = [node("ReduceSum", ["v_out"], ["s"], keepdims=0),
                 node("Less", ["s", "big"], ["cond_out"])]
    m["loop_data"] = model(
        [node("Constant", [], ["go"], value=numpy_helper.from_array(np.array(True), "go")),
         node("Loop", ["M", "go", "x"], ["y", "z"], name="loop", body=body(data_cond))],
        x, y + [vi("z", F32, None)],
        inits=[two, ints("M", 10), numpy_helper.from_array(np.array(100.0, np.float32), "big")])
    m["loop_forever"] = model([node("Loop", ["", "", "x"], ["y", "z"], name="loop",
                                    body=body(keep))], x, y + [vi("z", F32, None)], inits=[two])
    m["loop_huge"] = model([node("Loop", ["M", "", "x"], ["y", "z"], name="loop", body=body(keep))],
                           x, y + [vi("z", F32, None)], inits=[two, ints("M", 100000)])
    m["loop_empty_scan"] = model([node("Loop", ["M", "", "x"], ["y", "z"], name="loop",
                                       body=body(keep))],
                                 x, y + [vi("z", F32, None)], inits=[two, ints("M", 0)])
    m["loop_bad_body"] = model([node("Loop", ["M", "", "x", "x"], ["y", "y2"], name="loop",
                                     body=body(keep))],
                               x, y + [vi("y2", F32, None)], inits=[two, ints("M", 2)])
    m["if_two_conds"] = model(
        [node("Constant", [], ["cond"], value=numpy_helper.from_array(np.array([True, False]), "c")),
         node("If", ["cond"], ["y"], name="choose", then_branch=then_g, else_branch=else_g)],
        x, y, inits=[two])
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
