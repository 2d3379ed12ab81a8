"""The `composed` group of onnx_models.py: ops the importer builds from
weft's elementwise ops, Pad and Einsum (its own module: the biggest group)."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper  # noqa: F401

from onnx_builders import (F32, F16, I64, I32, BOOL, INT_MAX, group, vi, ints,  # noqa: F401
                           floats, node, model, unary_model, binary_model)


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
def coverage():
    """Atan, Asin, Acos, ReduceProd, LRN, LpNormalization,
    MeanVarianceNormalization, LpPool and GlobalLpPool, and their errors."""
    m = {}
    y = [vi("y", F32, None)]
    m["atan"] = unary_model("Atan")
    m["asin"] = unary_model("Asin")
    m["acos"] = unary_model("Acos")
    m["reduce_prod"] = model([node("ReduceProd", ["x"], ["y"], axes=[0, 2], keepdims=0)],
                             [vi("x", F32, [3, 2, 5])], y)
    m["reduce_prod_int"] = model([node("ReduceProd", ["x"], ["y"], keepdims=1)],
                                 [vi("x", I64, [4])], [vi("y", I64, None)])
    m["reduce_prod_const"] = model(
        [node("ReduceProd", ["s"], ["p"], keepdims=0), node("Reshape", ["x", "p"], ["y"])],
        [vi("x", F32, [2, 3])], y, inits=[ints("s", [3, 2])])
    m["reduce_prod_bool"] = model([node("ReduceProd", ["x"], ["y"])], [vi("x", BOOL, [4])],
                                  [vi("y", BOOL, None)])
    m["lrn"] = model([node("LRN", ["x"], ["y"], size=3, alpha=0.5)],
                     [vi("x", F32, [2, 4, 3, 3])], y)
    m["lrn_no_size"] = model([node("LRN", ["x"], ["y"])], [vi("x", F32, [2, 4, 3, 3])], y)
    m["lp_normalization"] = model([node("LpNormalization", ["x"], ["y"], axis=0, p=1)],
                                  [vi("x", F32, [2, 3])], y)
    m["lp_normalization_p3"] = model([node("LpNormalization", ["x"], ["y"], p=3)],
                                     [vi("x", F32, [2, 3])], y)
    m["mvn"] = model([node("MeanVarianceNormalization", ["x"], ["y"])],
                     [vi("x", F32, [2, 3, 4, 4])], y)
    m["lp_pool"] = model([node("LpPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
                         [vi("x", F32, [1, 2, 4, 4])], y)
    m["lp_pool_p3"] = model([node("LpPool", ["x"], ["y"], kernel_shape=[3], p=3)],
                            [vi("x", F32, [1, 2, 5])], y)
    m["lp_pool_dilated"] = model([node("LpPool", ["x"], ["y"], kernel_shape=[2, 2],
                                       dilations=[2, 2])], [vi("x", F32, [1, 2, 5, 5])], y,
                                 opset=18)
    m["global_lp_pool"] = model([node("GlobalLpPool", ["x"], ["y"], p=1)],
                                [vi("x", F32, [2, 3, 4, 4])], y)
    return m


@group
def random():
    """RandomNormal(Like), RandomUniform(Like), Bernoulli and Multinomial
    (weft.random)."""
    m = {}
    x = [vi("x", F32, [2, 3])]
    y = [vi("y", F32, None)]
    m["random_normal"] = model([node("RandomNormal", [], ["y"], shape=[4, 5], mean=1.0,
                                     scale=2.0, seed=3.0)], [], y)
    m["random_uniform_f64"] = model([node("RandomUniform", [], ["y"], shape=[3],
                                          dtype=TensorProto.DOUBLE, low=-1.0, high=1.0)],
                                    [], [vi("y", TensorProto.DOUBLE, None)])
    # Two draws in one graph: two streams (after a dropout's, in node order).
    m["random_like"] = model([node("RandomNormalLike", ["x"], ["a"]),
                              node("RandomUniformLike", ["a"], ["b"], low=2.0, high=3.0),
                              node("Add", ["a", "b"], ["y"])], x, y)
    m["random_like_int"] = model([node("RandomUniformLike", ["i"], ["y"], dtype=F32)],
                                 [vi("i", I64, [2, 3])], y)
    m["bernoulli"] = model([node("Bernoulli", ["x"], ["y"], dtype=I64)], x,
                           [vi("y", I64, None)], opset=15)
    m["random_like_int_no_dtype"] = model([node("RandomNormalLike", ["i"], ["y"])],
                                          [vi("i", I64, [2, 3])], [vi("y", I64, None)])
    m["random_no_shape"] = model([node("RandomNormal", [], ["y"])], [], y)
    m["bernoulli_int"] = model([node("Bernoulli", ["i"], ["y"])], [vi("i", I64, [2])],
                               [vi("y", I64, None)], opset=15)
    m["multinomial"] = model([node("Multinomial", ["x"], ["y"], sample_size=4, dtype=I64)], x,
                             [vi("y", I64, None)])
    m["multinomial_3d"] = model([node("Multinomial", ["t"], ["y"])], [vi("t", F32, [2, 3, 4])],
                                [vi("y", TensorProto.INT32, None)])
    m["multinomial_no_samples"] = model([node("Multinomial", ["x"], ["y"], sample_size=0)], x,
                                        [vi("y", TensorProto.INT32, None)])
    m["multinomial_float_dtype"] = model([node("Multinomial", ["x"], ["y"], dtype=F32)], x, y)
    return m


@group
def grid_sample():
    """GridSample: the gathers it is built from, and its errors."""
    m = {}
    y = [vi("y", F32, None)]
    xg = [vi("x", F32, [1, 2, 3, 4]), vi("g", F32, [1, 5, 6, 2])]
    m["grid_sample"] = model([node("GridSample", ["x", "g"], ["y"])], xg, y, opset=16)
    m["grid_sample_nearest"] = model([node("GridSample", ["x", "g"], ["y"], mode="nearest",
                                           padding_mode="border")], xg, y, opset=16)
    m["grid_sample_3d"] = model([node("GridSample", ["x", "g"], ["y"], mode="linear")],
                                [vi("x", F32, [1, 2, 3, 4, 5]), vi("g", F32, [1, 2, 2, 2, 3])],
                                y, opset=20)
    m["grid_sample_bad_grid"] = model([node("GridSample", ["x", "g"], ["y"])],
                                      [vi("x", F32, [1, 2, 3, 4]), vi("g", F32, [2, 5, 6, 2])],
                                      y, opset=16)
    m["grid_sample_bad_mode"] = model([node("GridSample", ["x", "g"], ["y"], mode="area")],
                                      xg, y, opset=16)
    m["grid_sample_bad_padding"] = model([node("GridSample", ["x", "g"], ["y"],
                                               padding_mode="wrap")], xg, y, opset=16)
    return m


@group
def more_ops():
    """QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, the window
    functions, ReverseSequence and Scan, and their errors."""
    m = {}
    U8 = TensorProto.UINT8
    I8 = TensorProto.INT8
    y = [vi("y", F32, None)]
    scale = numpy_helper.from_array(np.array([0.5, 0.25, 2.0], np.float32), "scale")
    zp = numpy_helper.from_array(np.array([1, 2, 3], np.int8), "zp")
    m["quantize"] = model([node("QuantizeLinear", ["x", "scale", "zp"], ["y"], axis=1)],
                          [vi("x", F32, [2, 3])], [vi("y", I8, None)], inits=[scale, zp])
    m["quantize_u8_default"] = model([node("QuantizeLinear", ["x", "s"], ["y"])],
                                     [vi("x", F32, [2, 3])], [vi("y", U8, None)],
                                     inits=[numpy_helper.from_array(np.array(0.1, np.float32), "s")])
    m["dequantize"] = model([node("DequantizeLinear", ["q", "scale", "zp"], ["y"], axis=1)],
                            [vi("q", I8, [2, 3])], y, inits=[scale, zp])
    m["dequantize_bad_axis"] = model([node("DequantizeLinear", ["q", "scale", "zp"], ["y"], axis=0)],
                                     [vi("q", I8, [2, 3])], y, inits=[scale, zp])
    m["dequantize_blocked"] = model([node("DequantizeLinear", ["q", "scale", "zp"], ["y"],
                                          axis=1, block_size=2)],
                                    [vi("q", I8, [2, 3])], y, inits=[scale, zp], opset=21)
    m["quantize_int32"] = model([node("QuantizeLinear", ["x", "s", "z"], ["y"])],
                                [vi("x", F32, [2, 3])], [vi("y", I32, None)],
                                inits=[numpy_helper.from_array(np.array(0.1, np.float32), "s"),
                                       numpy_helper.from_array(np.array(0, np.int32), "z")])
    # PyTorch's fake-quantize to a reduced range: Q, a Clip of the uint8, DQ;
    # the quantized tensor is an output as well.
    u8 = lambda v, n: numpy_helper.from_array(np.array(v, np.uint8), n)
    m["qdq_clip"] = model([node("QuantizeLinear", ["x", "s", "z"], ["q"]),
                           node("Clip", ["q", "", "top"], ["c"]),
                           node("DequantizeLinear", ["c", "s", "z"], ["y"])],
                          [vi("x", F32, [2, 3])], [vi("y", F32, None), vi("q", U8, None)],
                          inits=[numpy_helper.from_array(np.array(0.1, np.float32), "s"),
                                 u8(10, "z"), u8(127, "top")])
    i64 = lambda v, n: numpy_helper.from_array(np.array(v, np.int64), n)
    mel_inputs = lambda bins, length, rate, low, high: [
        i64(bins, "bins"), i64(length, "length"), i64(rate, "rate"),
        f32v(low, "low"), f32v(high, "high")]
    f32v = lambda v, n: numpy_helper.from_array(np.array(v, np.float32), n)
    mel = node("MelWeightMatrix", ["bins", "length", "rate", "low", "high"], ["y"])
    m["mel"] = model([mel], [], y, inits=mel_inputs(2, 16, 8000, 100.0, 4000.0), opset=17)
    m["mel_out_of_range"] = model([mel], [], y, inits=mel_inputs(2, 16, 8000, 0.0, 9000.0),
                                  opset=17)
    m["hann"] = model([node("HannWindow", ["n"], ["y"], periodic=0)], [], y,
                      inits=[numpy_helper.from_array(np.array(5, np.int32), "n")])
    m["reverse_sequence"] = model([node("ReverseSequence", ["x", "lens"], ["y"], batch_axis=0,
                                        time_axis=1)],
                                  [vi("x", F32, [2, 4])], y, inits=[ints("lens", [3, 1])])
    m["reverse_sequence_bad_axes"] = model(
        [node("ReverseSequence", ["x", "lens"], ["y"], batch_axis=0, time_axis=2)],
        [vi("x", F32, [2, 4, 3])], y, inits=[ints("lens", [3, 1])])
    f32 = lambda v, n: numpy_helper.from_array(np.array(v, np.float32), n)
    u8 = lambda v, n: numpy_helper.from_array(np.array(v, np.uint8), n)
    m["qlinear_matmul"] = model(
        [node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])],
        [vi("a", U8, [2, 4]), vi("b", U8, [4, 3])], [vi("y", U8, None)],
        inits=[f32(0.5, "as"), u8(3, "az"), f32(0.25, "bs"), u8(1, "bz"), f32(2.0, "ys"),
               u8(10, "yz")])
    m["matmul_integer"] = model([node("MatMulInteger", ["a", "b", "az"], ["y"])],
                                [vi("a", U8, [2, 4]), vi("b", U8, [4, 3])], [vi("y", I32, None)],
                                inits=[u8(3, "az")])
    m["conv_integer_scalar_w"] = model([node("ConvInteger", ["x", "w"], ["y"])],
                                       [vi("x", U8, [1, 2, 4, 4]), vi("w", U8, [])],
                                       [vi("y", I32, None)])
    m["matmul_integer_scalar"] = model([node("MatMulInteger", ["a", "b"], ["y"])],
                                       [vi("a", U8, [2, 4]), vi("b", U8, [])],
                                       [vi("y", I32, None)])
    m["qlinear_conv_1d_weight"] = model(
        [node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])],
        [vi("x", U8, [1, 2, 4, 4]), vi("w", U8, [3, 2])], [vi("y", U8, None)],
        inits=[f32(0.5, "xs"), u8(3, "xz"), f32(0.25, "ws"), u8(1, "wz"), f32(2.0, "ys"),
               u8(10, "yz")])
    keep = numpy_helper.from_array(np.array([True, False, True]), "keep")
    m["compress"] = model([node("Compress", ["x", "keep"], ["y"], axis=1)],
                          [vi("x", F32, [2, 3])], y, inits=[keep])
    m["compress_data"] = model([node("Compress", ["x", "c"], ["y"], axis=1)],
                               [vi("x", F32, [2, 3]), vi("c", BOOL, [3])], y)
    m["dft"] = model([node("DFT", ["x"], ["y"], axis=1, onesided=1)],
                     [vi("x", F32, [2, 4, 1])], y, opset=17)
    m["dft_last_axis"] = model([node("DFT", ["x"], ["y"], axis=2)],
                               [vi("x", F32, [2, 4, 1])], y, opset=17)
    m["dft_onesided_inverse"] = model([node("DFT", ["x"], ["y"], axis=1, onesided=1, inverse=1)],
                                      [vi("x", F32, [2, 4, 1])], y, opset=17)
    m["stft_no_length"] = model([node("STFT", ["x", "step"], ["y"])],
                                [vi("x", F32, [1, 16, 1])], y, inits=[ints("step", 4)], opset=17)
    body = helper.make_graph([node("Add", ["s", "xt"], ["s_out"]),
                              node("Identity", ["s_out"], ["out"])], "body",
                             [vi("s", F32, [3]), vi("xt", F32, [3])],
                             [vi("s_out", F32, [3]), vi("out", F32, [3])])
    m["scan"] = model([node("Scan", ["s0", "x"], ["y", "z"], body=body, num_scan_inputs=1)],
                      [vi("s0", F32, [3]), vi("x", F32, [2, 3])], y + [vi("z", F32, None)])
    m["scan_bad_body"] = model([node("Scan", ["s0", "x", "x"], ["y", "z"], body=body,
                                     num_scan_inputs=2)],
                               [vi("s0", F32, [3]), vi("x", F32, [2, 3])], y + [vi("z", F32, None)])
    return m


@group
def sequences():
    """Sequences, resolved at import, and their errors."""
    m = {}
    y = [vi("y", F32, None)]
    ab = [vi("a", F32, [2, 3]), vi("b", F32, [2, 3])]
    # [a, b] -> insert a at the front -> erase the last -> stack: [a, a].
    m["seq_stack"] = model([node("SequenceConstruct", ["a", "b"], ["s"]),
                            node("SequenceInsert", ["s", "a", "zero"], ["s2"]),
                            node("SequenceErase", ["s2"], ["s3"]),
                            node("ConcatFromSequence", ["s3"], ["y"], axis=-1, new_axis=1)],
                           ab, y, inits=[ints("zero", 0)])
    # SequenceAt(-1), SequenceLength.
    m["seq_at"] = model([node("SequenceConstruct", ["a", "b"], ["s"]),
                         node("SequenceAt", ["s", "last"], ["t"]),
                         node("SequenceLength", ["s"], ["n"]),
                         node("Cast", ["n"], ["nf"], to=F32),
                         node("Mul", ["t", "nf"], ["y"])], ab, y, inits=[ints("last", -1)])
    # SplitToSequence into chunks of 2 along axis 1 (3 = 2 + 1), joined back.
    m["seq_split"] = model([node("SplitToSequence", ["a", "two"], ["s"], axis=1),
                            node("ConcatFromSequence", ["s"], ["y"], axis=1)],
                           ab[:1], y, inits=[ints("two", 2)])
    m["seq_split_squeeze"] = model([node("SplitToSequence", ["a"], ["s"], axis=0, keepdims=0),
                                    node("SequenceAt", ["s", "one"], ["y"])],
                                   ab[:1], y, inits=[ints("one", 1)])
    m["seq_output"] = model([node("SequenceConstruct", ["a", "b"], ["y"])], ab,
                            [helper.make_tensor_sequence_value_info("y", F32, None)])
    m["seq_position"] = model([node("SequenceConstruct", ["a", "b"], ["s"]),
                               node("SequenceAt", ["s", "three"], ["y"])], ab, y,
                              inits=[ints("three", 3)])
    m["seq_mixed"] = model([node("SequenceConstruct", ["a", "i"], ["s"]),
                            node("ConcatFromSequence", ["s"], ["y"], axis=0)],
                           ab[:1] + [vi("i", I64, [2, 3])], y)
    m["seq_empty_concat"] = model([node("SequenceEmpty", [], ["s"]),
                                   node("ConcatFromSequence", ["s"], ["y"], axis=0)], [], y)
    # Optionals: `if mask is not None` over an Optional that holds x, and
    # over an empty one (the If takes then_branch, then else_branch).
    opt_type = helper.make_optional_type_proto(helper.make_tensor_type_proto(F32, [2, 3]))
    then_g = helper.make_graph([node("OptionalGetElement", ["o"], ["t"]),
                                node("Add", ["t", "a"], ["t2"])], "then", [],
                               [vi("t2", F32, None)])
    else_g = helper.make_graph([node("Neg", ["a"], ["n"])], "else", [], [vi("n", F32, None)])
    for name, inputs in (("optional_full", ["b"]), ("optional_empty", [])):
        m[name] = model([node("Optional", inputs, ["o"], type=opt_type),
                         node("OptionalHasElement", ["o"], ["has"]),
                         node("If", ["has"], ["y"], then_branch=then_g, else_branch=else_g)],
                        ab, y, opset=18)
    m["optional_get_empty"] = model([node("Optional", [], ["o"], type=opt_type),
                                     node("OptionalGetElement", ["o"], ["y"])], ab, y, opset=18)
    m["seq_as_tensor"] = model([node("SequenceConstruct", ["a", "b"], ["s"]),
                                node("Relu", ["s"], ["y"])], ab, y)
    # SequenceMap: the body once per element; b whole, [a, b]'s elements
    # one at a time.
    body_vi = lambda n: vi(n, F32, None)
    add_body = helper.make_graph([node("Add", ["p", "q"], ["r"])], "add",
                                 [body_vi("p"), body_vi("q")], [body_vi("r")])
    m["seq_map"] = model([node("SequenceConstruct", ["a", "b"], ["s"]),
                          node("SequenceMap", ["s", "b"], ["m"], body=add_body),
                          node("ConcatFromSequence", ["m"], ["y"], axis=0)], ab, y)
    m["seq_map_short"] = model([node("SequenceConstruct", ["a", "b"], ["s"]),
                                node("SequenceConstruct", ["a"], ["t"]),
                                node("SequenceMap", ["s", "t"], ["m"], body=add_body),
                                node("ConcatFromSequence", ["m"], ["y"], axis=0)], ab, y)
    m["seq_map_one_input"] = model([node("SequenceConstruct", ["a", "b"], ["s"]),
                                    node("SequenceMap", ["s"], ["m"], body=add_body),
                                    node("ConcatFromSequence", ["m"], ["y"], axis=0)], ab, y)
    return m


@group
def image_ops():
    """GroupNormalization, CenterCropPad, AffineGrid, Col2Im, Det, RoiAlign
    and MaxRoiPool (built from weft's ops at import), and their errors."""
    m = {}
    y = [vi("y", F32, None)]
    gn = lambda groups, count, shape=(2, 6, 4), opset=18, **attrs: model(
        [node("GroupNormalization", ["x", "s", "b"], ["y"], **attrs,
              **({} if groups is None else {"num_groups": groups}))],
        [vi("x", F32, list(shape))], y, inits=[floats("s", [count]), floats("b", [count], 1)],
        opset=opset)
    m["group_norm"] = gn(3, 3)
    m["group_norm_21"] = gn(3, 6, opset=21)
    m["group_norm_uneven"] = gn(4, 4)
    m["group_norm_no_groups"] = gn(None, 3)
    m["group_norm_21_per_group"] = gn(3, 3, opset=21)
    m["center_crop_pad"] = model([node("CenterCropPad", ["x", "shape"], ["y"], axes=[1, -1])],
                                 [vi("x", F32, [2, 5, 3])], y, inits=[ints("shape", [2, 6])],
                                 opset=18)
    m["center_crop_pad_mismatch"] = model(
        [node("CenterCropPad", ["x", "shape"], ["y"], axes=[0])], [vi("x", F32, [2, 5])], y,
        inits=[ints("shape", [2, 6])], opset=18)
    m["affine_grid"] = model([node("AffineGrid", ["theta", "size"], ["y"])],
                             [vi("theta", F32, [2, 2, 3])], y,
                             inits=[ints("size", [2, 1, 3, 4])], opset=20)
    m["affine_grid_bad_theta"] = model([node("AffineGrid", ["theta", "size"], ["y"])],
                                       [vi("theta", F32, [2, 2, 3])], y,
                                       inits=[ints("size", [2, 1, 2, 3, 4])], opset=20)
    col2im = lambda length: model(
        [node("Col2Im", ["cols", "image", "block"], ["y"], strides=[1, 2])],
        [vi("cols", F32, [1, 8, length])], y,
        inits=[ints("image", [3, 5]), ints("block", [2, 2])], opset=18)
    m["col2im"] = col2im(4)
    m["col2im_wrong_columns"] = col2im(5)
    m["det"] = model([node("Det", ["x"], ["y"])], [vi("x", F32, [2, 3, 3])], y)
    m["det_not_square"] = model([node("Det", ["x"], ["y"])], [vi("x", F32, [2, 3])], y)
    roi = lambda opset=16, **attrs: model(
        [node("RoiAlign", ["x", "rois", "batch"], ["y"], **attrs)],
        [vi("x", F32, [1, 2, 8, 8]), vi("rois", F32, [3, 4]), vi("batch", I64, [3])], y,
        opset=opset)
    m["roi_align"] = roi(output_height=2, output_width=3, sampling_ratio=2)
    m["roi_align_adaptive"] = roi(output_height=2, output_width=2)
    m["roi_align_median"] = roi(mode="median", sampling_ratio=1)
    m["max_roi_pool"] = model([node("MaxRoiPool", ["x", "rois"], ["y"], pooled_shape=[2, 2])],
                              [vi("x", F32, [1, 2, 8, 8]), vi("rois", F32, [3, 5])], y)
    m["max_roi_pool_four_columns"] = model(
        [node("MaxRoiPool", ["x", "rois"], ["y"], pooled_shape=[2, 2])],
        [vi("x", F32, [1, 2, 8, 8]), vi("rois", F32, [3, 4])], y)
    return m
