"""Gradient cases of the ONNX ops that weft's importer gained for PyTorch's
exports of 2026-11-27: If with a condition known at import, Atan (weft.atan)
and Asin / Acos built on it, ReduceProd (pairwise products), LRN,
LpNormalization, MeanVarianceNormalization, LpPool and GlobalLpPool (built
from pools and reductions). check_gradients.py runs them (its case() and
node() are passed in); each draws from a generator of its own."""
import numpy as np
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper


def define(case, node, i64):
    g = "coverage"
    rng = np.random.RandomState(53)

    def uniform(*shape, low=-1.0, high=1.0):
        return rng.uniform(low, high, size=shape).astype(np.float32)

    # The trigonometric inverses, inside their domains (asin and acos away
    # from +-1, where the slope is infinite).
    case("atan", {"x": uniform(2, 3, low=-3, high=3)}, [node("Atan", ["x"], "y")],
         lambda e: torch.atan(e["x"]), group=g)
    case("asin", {"x": uniform(2, 3, low=-0.9, high=0.9)}, [node("Asin", ["x"], "y")],
         lambda e: torch.asin(e["x"]), group=g)
    case("acos", {"x": uniform(2, 3, low=-0.9, high=0.9)}, [node("Acos", ["x"], "y")],
         lambda e: torch.acos(e["x"]), group=g)

    # ReduceProd over an odd count (a factor carried along), over two
    # non-adjacent axes, and with a zero factor (each factor's gradient is the
    # product of the others: non-zero only for the zero's own position).
    case("reduce_prod_odd_axis", {"x": uniform(2, 5, 3, low=0.5, high=1.5)},
         [node("ReduceProd", ["x"], "y", axes=[1], keepdims=1)],
         lambda e: torch.prod(e["x"], dim=1, keepdim=True), group=g)
    case("reduce_prod_two_axes", {"x": uniform(3, 2, 4, low=-1.5, high=1.5)},
         [node("ReduceProd", ["x"], "y", axes=[0, 2], keepdims=0)],
         lambda e: torch.prod(torch.prod(e["x"], dim=2), dim=0), group=g)
    with_zero = uniform(2, 6, low=0.5, high=1.5)
    with_zero[0, 3] = 0.0
    case("reduce_prod_zero", {"x": with_zero},
         [node("ReduceProd", ["x"], "y", axes=[1], keepdims=0)],
         lambda e: torch.prod(e["x"], dim=1), group=g, ties=True)

    # LRN with an odd and an even window. ONNX puts an even window's extra
    # channel after c (floor((size-1)/2) before, ceil((size-1)/2) after);
    # PyTorch's local_response_norm puts it before (and its export builds
    # the norm from a Pad and an AveragePool, not LRN).
    def lrn(x, size, alpha, beta, bias):
        before, after = (size - 1) // 2, size // 2
        padded = F.pad(x * x, (0, 0, 0, 0, before, after))
        window = sum(padded[:, k:k + x.shape[1]] for k in range(size))
        return x / (bias + alpha / size * window) ** beta
    for size in (3, 4):
        case("lrn_size%d" % size, {"x": uniform(2, 5, 3, 2)},
             [node("LRN", ["x"], "y", size=size, alpha=0.5, beta=0.75, bias=2.0)],
             lambda e, size=size: lrn(e["x"], size, 0.5, 0.75, 2.0), group=g)

    case("lp_normalization_p2", {"x": uniform(3, 4)},
         [node("LpNormalization", ["x"], "y", axis=1, p=2)],
         lambda e: e["x"] / e["x"].norm(p=2, dim=1, keepdim=True), group=g)
    case("lp_normalization_p1_axis0", {"x": rng.choice([-1, 1], (3, 4)).astype(np.float32)
                                      * uniform(3, 4, low=0.3, high=1.0)},
         [node("LpNormalization", ["x"], "y", axis=0, p=1)],
         lambda e: e["x"] / e["x"].abs().sum(dim=0, keepdim=True), group=g)

    def mvn(x, axes):
        m = x.mean(dim=axes, keepdim=True)
        var = (x * x).mean(dim=axes, keepdim=True) - m * m
        return (x - m) / (var.sqrt() + 1e-9)
    case("mean_variance_normalization", {"x": uniform(2, 3, 2, 2)},
         [node("MeanVarianceNormalization", ["x"], "y")],
         lambda e: mvn(e["x"], (0, 2, 3)), group=g)

    # LpPool: p = 2 with padding and strides, p = 3 without; GlobalLpPool.
    case("lp_pool_p2_pads", {"x": uniform(1, 2, 5, 4)},
         [node("LpPool", ["x"], "y", kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1], p=2)],
         lambda e: F.lp_pool2d(F.pad(e["x"], (0, 1, 1, 1)), 2, (3, 2), stride=(2, 1)), group=g)
    case("lp_pool_p3", {"x": uniform(1, 2, 4, 4, low=0.2, high=1.0)},
         [node("LpPool", ["x"], "y", kernel_shape=[2, 2], strides=[2, 2], p=3)],
         lambda e: F.lp_pool2d(e["x"], 3, 2, stride=2), group=g)
    case("global_lp_pool_p2", {"x": uniform(2, 3, 3, 2)},
         [node("GlobalLpPool", ["x"], "y", p=2)],
         lambda e: e["x"].pow(2).sum(dim=(2, 3), keepdim=True).sqrt(), group=g)
    case("global_lp_pool_p1", {"x": rng.choice([-1, 1], (2, 3, 4)).astype(np.float32)
                               * uniform(2, 3, 4, low=0.3, high=1.0)},
         [node("GlobalLpPool", ["x"], "y", p=1)],
         lambda e: e["x"].abs().sum(dim=2, keepdim=True), group=g)

    # If with a constant condition: the taken branch reads the outer
    # parameter and its gradient flows through it.
    then_g = helper.make_graph([node("Tanh", ["x"], "t"), node("Mul", ["t", "x"], "t2")], "then", [],
                               [helper.make_tensor_value_info("t2", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([node("Neg", ["x"], "n")], "else", [],
                               [helper.make_tensor_value_info("n", TensorProto.FLOAT, None)])
    case("if_constant_condition", {"x": uniform(2, 3)},
         [node("Constant", [], "cond",
               value=helper.make_tensor("c", TensorProto.BOOL, [], [True])),
          node("If", ["cond"], "y", then_branch=then_g, else_branch=else_g)],
         lambda e: torch.tanh(e["x"]) * e["x"], group=g)

    # Loop, unrolled at import: three iterations of v = tanh(v * w + i)
    # carried, each iteration's v stacked as a scan output; the gradients of
    # x and w flow through every iteration.
    def vi(name, elem, shape):
        return helper.make_tensor_value_info(name, elem, shape)
    body = helper.make_graph(
        [node("Mul", ["v", "w"], "vw"), node("Cast", ["i"], "fi", to=TensorProto.FLOAT),
         node("Add", ["vw", "fi"], "pre"), node("Tanh", ["pre"], "v_out"),
         node("Identity", ["cond_in"], "cond_out"), node("Identity", ["v_out"], "scan")],
        "body", [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
                 vi("v", TensorProto.FLOAT, None)],
        [vi("cond_out", TensorProto.BOOL, []), vi("v_out", TensorProto.FLOAT, None),
         vi("scan", TensorProto.FLOAT, None)])

    def unrolled(e):
        v, rows = e["x"], []
        for i in range(3):
            v = torch.tanh(v * e["w"] + i)
            rows.append(v)
        return torch.stack(rows) + v
    case("loop_unrolled", {"x": uniform(2, 3), "w": uniform(3)},
         [node("Loop", ["M", "", "x"], ["last", "stacked"], body=body),
          node("Add", ["stacked", "last"], "y")],
         unrolled, consts={"M": i64(3)}, group=g)

    # GridSample (gathers of the flattened X and interpolation weights):
    # gradients of X and of the grid against F.grid_sample in float64.
    # Grid values reach past [-1, 1] so the padding modes matter.
    def sample(mode, padding, align):
        return lambda e: F.grid_sample(e["x"], e["grid"], mode=mode, padding_mode=padding,
                                       align_corners=align)
    for mode, padding, align in (("bilinear", "zeros", False), ("bilinear", "border", True),
                                 ("bilinear", "reflection", False),
                                 ("bicubic", "reflection", True), ("bicubic", "zeros", False)):
        case("grid_sample_%s_%s_%s" % (mode, padding, "align" if align else "noalign"),
             {"x": uniform(2, 2, 4, 5), "grid": uniform(2, 3, 4, 2, low=-1.3, high=1.3)},
             [node("GridSample", ["x", "grid"], "y", mode=mode, padding_mode=padding,
                   align_corners=int(align))],
             sample(mode, padding, align), group=g)
    # Nearest: only X has a gradient (the grid's is zero almost everywhere).
    case("grid_sample_nearest", {"x": uniform(1, 2, 4, 4)},
         [node("GridSample", ["x", "frozen.grid"], "y", mode="nearest")],
         lambda e: F.grid_sample(e["x"], e["frozen.grid"], mode="nearest", align_corners=False),
         consts={"frozen.grid": uniform(1, 3, 3, 2, low=-1.1, high=1.1)}, group=g)

    # Scan, unrolled: a running state s = tanh(s * w + x_t) over the rows of
    # x (reverse direction), the states stacked as a scan output.
    scan_body = helper.make_graph(
        [node("Mul", ["s", "w"], "sw"), node("Add", ["sw", "xt"], "pre"),
         node("Tanh", ["pre"], "s_out"), node("Identity", ["s_out"], "out")],
        "scan_body", [vi("s", TensorProto.FLOAT, [3]), vi("xt", TensorProto.FLOAT, [3])],
        [vi("s_out", TensorProto.FLOAT, [3]), vi("out", TensorProto.FLOAT, [3])])

    def scanned(e):
        s, outs = e["s0"], []
        for t in reversed(range(4)):
            s = torch.tanh(s * e["w"] + e["x"][t])
            outs.append(s)
        return torch.stack(outs, dim=1) + s.unsqueeze(1)
    case("scan_reverse", {"s0": uniform(3), "x": uniform(4, 3), "w": uniform(3)},
         [node("Scan", ["s0", "x"], ["last", "stacked"], body=scan_body, num_scan_inputs=1,
               scan_input_directions=[1], scan_output_axes=[1]),
          node("Unsqueeze", ["last", "one"], "last_col"),
          node("Add", ["stacked", "last_col"], "y")],
         scanned, consts={"one": i64([1])}, group=g)

    # ReverseSequence: each batch row's first len elements reversed in time.
    lens = [3, 1, 4]

    def reversed_rows(e):
        x = e["x"].clone()
        out = x.clone()
        for b, n in enumerate(lens):
            out[:n, b] = torch.flip(x[:n, b], [0])
        return out
    case("reverse_sequence", {"x": uniform(4, 3, 2)},
         [node("ReverseSequence", ["x", "lens"], "y", batch_axis=1, time_axis=0)],
         reversed_rows, consts={"lens": i64(lens)}, group=g)

    # DequantizeLinear: the gradient of a per-channel scale (x int8 data).
    q = rng.randint(-100, 100, (2, 3)).astype(np.int8)
    zp = np.array([1, -2, 0], dtype=np.int8)
    case("dequantize_scale", {"scale": uniform(3, low=0.1, high=0.5)},
         [node("DequantizeLinear", ["q", "scale", "zp"], "y", axis=1)],
         lambda e: (e["q"].double() - e["zp"].double()) * e["scale"],
         consts={"q": q, "zp": zp}, group=g)

    # DFT and STFT (products with constant cosine and sine matrices) against
    # torch.fft in float64: a complex signal along axis 1 with dft_length
    # padding, an inverse one, a real one-sided one; an STFT with a window.
    def as_complex(x):
        return torch.complex(x[..., 0], x[..., 1])

    def fft(x, axis, n, inverse=False, onesided=False):
        signal = as_complex(x) if x.shape[-1] == 2 else x[..., 0]
        out = (torch.fft.ifft if inverse else torch.fft.fft)(signal, n=n, dim=axis)
        if onesided:
            out = out.narrow(axis, 0, n // 2 + 1)
        return torch.view_as_real(out)
    case("dft_complex_padded", {"x": uniform(2, 5, 3, 2)},
         [node("DFT", ["x", "n"], "y", axis=1)],
         lambda e: fft(e["x"], 1, 7), consts={"n": i64(7)}, group=g)
    case("dft_inverse_truncated", {"x": uniform(2, 6, 2)},
         [node("DFT", ["x", "n"], "y", axis=1, inverse=1)],
         lambda e: fft(e["x"], 1, 4, inverse=True), consts={"n": i64(4)}, group=g)
    case("dft_real_onesided", {"x": uniform(3, 8, 1)},
         [node("DFT", ["x"], "y", axis=1, onesided=1)],
         lambda e: fft(e["x"], 1, 8, onesided=True), group=g)

    def stft(e):
        frames = e["x"][:, :, 0].unfold(1, 8, 3) * e["w"]
        return torch.view_as_real(torch.fft.rfft(frames, dim=-1))
    case("stft_window", {"x": uniform(2, 20, 1), "w": uniform(8, low=0.2, high=1.0)},
         [node("STFT", ["x", "step", "w"], "y")], stft,
         consts={"step": i64(3)}, group=g)

    # MaxUnpool: X's values placed at MaxPool-style flat positions of a
    # larger output (output_shape pads the default 4 x 4 to 5 x 5, keeping
    # coordinates); the gradient of X is the output's at those places.
    unpool_idx = np.array([[[[5, 7], [13, 15]], [[16, 19], [24, 30]]]], dtype=np.int64)

    def unpooled(e):
        out = torch.zeros(1, 2, 5, 5, dtype=e["x"].dtype)
        flat_x = e["x"].reshape(-1)
        rows = []
        for n, i in enumerate(unpool_idx.reshape(-1)):
            c, rest = divmod(int(i), 16)
            rows.append((c, rest // 4, rest % 4, n))
        for c, r, col, n in rows:
            out[0, c, r, col] = flat_x[n]
        return out
    case("max_unpool_output_shape", {"x": uniform(1, 2, 2, 2)},
         [node("MaxUnpool", ["x", "idx", "shape"], "y", kernel_shape=[2, 2], strides=[2, 2])],
         unpooled, consts={"idx": unpool_idx, "shape": i64([1, 2, 5, 5])}, group=g)
