#!/usr/bin/python3
"""Node tests, in the layout of ONNX's own, for ops the Debian test data
does not cover: ops of opsets 18 to 21 (python3-onnx 1.12 stops at 17),
MaxRoiPool, SequenceMap over sequences built in the graph (Debian's feed
them as graph inputs), plus more Det and RoiAlign cases than its two each.

    /usr/bin/python3 test/conformance/make_node_tests.py OUTDIR

writes OUTDIR/node/test_<name>/{model.onnx, test_data_set_0/{input,output}_K.pb}
for `run_conformance.py --data-dir OUTDIR --suites node`. The expected
outputs come from numpy written from the ONNX operator specifications (and
onnxruntime's kernels where the specification leaves a detail open: the
RoiAlign and MaxRoiPool sampling), each checked here against PyTorch's or
torchvision's own op where one computes the same thing (F.group_norm,
F.affine_grid, F.fold, torchvision.ops.roi_align and roi_pool,
numpy.linalg.det against torch.det).
"""
import math
import os
import shutil
import sys

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT
I64 = TensorProto.INT64
RNG = np.random.default_rng(20261128)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def write(out, name, nodes, inputs, outputs, opset, inits=()):
    """inputs / outputs: [(name, array)]; graph inputs in that order."""
    def info(n, a):
        dtype = {np.dtype(np.float32): F32, np.dtype(np.int64): I64}[a.dtype]
        return helper.make_tensor_value_info(n, dtype, list(a.shape))
    graph = helper.make_graph(nodes, name, [info(n, a) for n, a in inputs],
                              [info(n, a) for n, a in outputs],
                              initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="weft-make-node-tests")
    model.ir_version = 8
    d = os.path.join(out, "node", "test_" + name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for kind, values in (("input", inputs), ("output", outputs)):
        for k, (n, a) in enumerate(values):
            with open(os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, k)), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())


def agree(ours, theirs, what, tol=1e-5):
    theirs = np.asarray(theirs, np.float64)
    err = np.max(np.abs(np.asarray(ours, np.float64) - theirs)) if ours.size else 0.0
    if err > tol * max(1.0, np.max(np.abs(theirs))):
        raise SystemExit("make_node_tests: %s: the reference and PyTorch differ by %g"
                         % (what, err))


# --- GroupNormalization (18: scale and bias per group; 21: per channel) ---

def group_norm(x, groups, scale, bias, eps, per_channel):
    n, c = x.shape[:2]
    rows = x.reshape(n, groups, -1).astype(np.float64)
    mean = rows.mean(axis=2, keepdims=True)
    var = rows.var(axis=2, keepdims=True)
    normalized = ((rows - mean) / np.sqrt(var + eps)).reshape(x.shape)
    if not per_channel:
        scale = np.repeat(scale, c // groups)
        bias = np.repeat(bias, c // groups)
    column = (1, c) + (1,) * (x.ndim - 2)
    return (normalized * scale.reshape(column) + bias.reshape(column)).astype(np.float32)


def group_norm_tests(out):
    for name, shape, groups, opset in (("group_normalization_18", (2, 6, 3, 4), 3, 18),
                                       ("group_normalization_18_3d", (1, 4, 2, 2, 3), 2, 18),
                                       ("group_normalization_21", (2, 6, 5), 2, 21),
                                       ("group_normalization_21_one_group", (3, 4, 2, 2), 1, 21)):
        x = randn(*shape) * 2 + 0.5
        count = shape[1] if opset >= 21 else groups
        scale, bias = randn(count), randn(count)
        y = group_norm(x, groups, scale, bias, 1e-3, opset >= 21)
        if opset >= 21:
            agree(y, F.group_norm(torch.from_numpy(x), groups, torch.from_numpy(scale),
                                  torch.from_numpy(bias), 1e-3).numpy(), name)
        node = helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"],
                                num_groups=groups, epsilon=1e-3)
        write(out, name, [node], [("x", x), ("scale", scale), ("bias", bias)], [("y", y)],
              opset)


# --- CenterCropPad (18) ---

def center_crop_pad(x, sizes, axes):
    y = x
    for a, size in zip(axes, sizes):
        dim = y.shape[a]
        if size < dim:
            start = (dim - size) // 2
            y = np.take(y, range(start, start + size), axis=a)
        elif size > dim:
            before = (size - dim) // 2
            widths = [(0, 0)] * y.ndim
            widths[a] = (before, size - dim - before)
            y = np.pad(y, widths)
    return y


def center_crop_pad_tests(out):
    x = randn(5, 6, 3)
    for name, sizes, axes in (("center_crop_pad_crop_and_pad", [4, 9], [0, 1]),
                              ("center_crop_pad_all_axes", [3, 7, 3], None),
                              ("center_crop_pad_negative_axis", [2], [-2])):
        attrs = {} if axes is None else {"axes": axes}
        node = helper.make_node("CenterCropPad", ["x", "shape"], ["y"], **attrs)
        y = center_crop_pad(x, sizes, [a % 3 for a in (axes or range(3))])
        write(out, name, [node], [("x", x)], [("y", y)], 18,
              inits=[("shape", np.array(sizes, np.int64))])


# --- AffineGrid (20) ---

def affine_grid(theta, size, align):
    spatial = size[2:]

    def coordinates(length):
        at = np.linspace(-1.0, 1.0, length) if length > 1 else np.array([-1.0])
        return at if align else at * (length - 1) / length
    axes = [coordinates(n) for n in reversed(spatial)]       # x, y[, z]
    mesh = np.meshgrid(*reversed(axes), indexing="ij")        # [D,] H, W each
    base = np.stack(list(reversed(mesh)) + [np.ones(spatial)], axis=-1)
    return np.einsum("...k,nck->n...c", base, theta.astype(np.float64)).astype(np.float32)


def affine_grid_tests(out):
    for name, size, align in (("affine_grid_2d", [2, 3, 4, 5], 0),
                              ("affine_grid_2d_align_corners", [2, 3, 4, 5], 1),
                              ("affine_grid_3d", [1, 2, 3, 4, 2], 0),
                              ("affine_grid_3d_align_corners", [2, 1, 2, 3, 4], 1)):
        dims = len(size) - 2
        theta = randn(size[0], dims, dims + 1)
        y = affine_grid(theta, size, align)
        agree(y, F.affine_grid(torch.from_numpy(theta), size, align_corners=bool(align)).numpy(),
              name)
        node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align)
        write(out, name, [node], [("theta", theta)], [("grid", y)], 20,
              inits=[("size", np.array(size, np.int64))])


# --- Col2Im (18) ---

def col2im(cols, image, block, dilations, pads, strides):
    dims = len(image)
    n, ck, length = cols.shape
    k = int(np.prod(block))
    c = ck // k
    counts = [(image[d] + pads[d] + pads[d + dims] - dilations[d] * (block[d] - 1) - 1)
              // strides[d] + 1 for d in range(dims)]
    assert length == int(np.prod(counts))
    y = np.zeros((n, c) + tuple(image), np.float64)
    cols = cols.reshape(n, c, k, length)
    for ki, kk in enumerate(np.ndindex(*block)):
        for li, ll in enumerate(np.ndindex(*counts)):
            at = [ll[d] * strides[d] + kk[d] * dilations[d] - pads[d] for d in range(dims)]
            if all(0 <= at[d] < image[d] for d in range(dims)):
                y[(slice(None), slice(None)) + tuple(at)] += cols[:, :, ki, li]
    return y.astype(np.float32)


def col2im_tests(out):
    for name, c, image, block, dil, pads, strides in (
            ("col2im_basic", 2, [4, 5], [2, 2], [1, 1], [0, 0, 0, 0], [1, 1]),
            ("col2im_strides_pads", 3, [5, 6], [3, 2], [1, 1], [1, 0, 1, 0], [2, 1]),
            ("col2im_dilations", 1, [6, 6], [2, 3], [2, 1], [1, 1, 1, 1], [1, 2]),
            ("col2im_uneven_pads", 2, [5, 4], [2, 2], [1, 1], [0, 1, 1, 0], [1, 1]),
            ("col2im_1d", 2, [7], [3], [1], [1, 1], [2])):
        dims = len(image)
        counts = [(image[d] + pads[d] + pads[d + dims] - dil[d] * (block[d] - 1) - 1)
                  // strides[d] + 1 for d in range(dims)]
        cols = randn(2, c * int(np.prod(block)), int(np.prod(counts)))
        y = col2im(cols, image, block, dil, pads, strides)
        if dims == 2 and pads[:2] == pads[2:]:
            agree(y, F.fold(torch.from_numpy(cols), image, block, dilation=dil,
                            padding=pads[:2], stride=strides).numpy(), name)
        node = helper.make_node("Col2Im", ["cols", "image_shape", "block_shape"], ["y"],
                                dilations=dil, pads=pads, strides=strides)
        write(out, name, [node], [("cols", cols)], [("y", y)], 18,
              inits=[("image_shape", np.array(image, np.int64)),
                     ("block_shape", np.array(block, np.int64))])


# --- Det ---

def det_tests(out):
    cases = {
        "det_batched": randn(2, 3, 4, 4),
        "det_6x6": randn(6, 6),
        "det_needs_pivoting": np.array([[0, 2, 1], [3, 0, 1], [1, 1, 0]], np.float32),
        "det_singular": np.array([[1, 2, 3], [2, 4, 6], [1, 0, 1]], np.float32),
        "det_1x1": np.array([[[-2.5]], [[4.0]]], np.float32),
    }
    for name, x in cases.items():
        y = np.linalg.det(x.astype(np.float64)).astype(np.float32)
        agree(y, torch.det(torch.from_numpy(x).double()).numpy(), name)
        write(out, name, [helper.make_node("Det", ["x"], ["y"])], [("x", x)],
              [("y", np.asarray(y, np.float32))], 13)


# --- RoiAlign ---

def roi_align(x, rois, batch, mode, oh, ow, ratio, scale, half):
    """onnxruntime's RoiAlign (ONNX's reference follows it): samples beyond
    [-1, size] count 0, taps at the last row or column collapse; max mode
    takes the largest weighted tap of any sample."""
    c, h, w = x.shape[1:]
    y = np.zeros((len(rois), c, oh, ow), np.float32)
    offset = np.float32(0.5 if half else 0.0)
    for r, (x1, y1, x2, y2) in enumerate(rois.astype(np.float32)):
        sw, sh = x1 * np.float32(scale) - offset, y1 * np.float32(scale) - offset
        ew, eh = x2 * np.float32(scale) - offset, y2 * np.float32(scale) - offset
        rw, rh = ew - sw, eh - sh
        if not half:
            rw, rh = max(rw, np.float32(1)), max(rh, np.float32(1))
        bh, bw = rh / np.float32(oh), rw / np.float32(ow)
        gh = ratio if ratio > 0 else int(math.ceil(rh / oh))
        gw = ratio if ratio > 0 else int(math.ceil(rw / ow))
        image = x[batch[r]].astype(np.float64)
        for ph in range(oh):
            for pw in range(ow):
                acc = None
                for iy in range(gh):
                    yy = sh + ph * bh + (iy + np.float32(0.5)) * bh / np.float32(gh)
                    for ix in range(gw):
                        xx = sw + pw * bw + (ix + np.float32(0.5)) * bw / np.float32(gw)
                        if yy < -1 or yy > h or xx < -1 or xx > w:
                            taps = [np.zeros(c)] * 4
                        else:
                            yv, xv = max(yy, 0.0), max(xx, 0.0)
                            yl, xl = int(yv), int(xv)
                            if yl >= h - 1:
                                yl = yh = h - 1
                                yv = float(yl)
                            else:
                                yh = yl + 1
                            if xl >= w - 1:
                                xl = xh = w - 1
                                xv = float(xl)
                            else:
                                xh = xl + 1
                            ly, lx = yv - yl, xv - xl
                            hy, hx = 1 - ly, 1 - lx
                            taps = [hy * hx * image[:, yl, xl], hy * lx * image[:, yl, xh],
                                    ly * hx * image[:, yh, xl], ly * lx * image[:, yh, xh]]
                        if mode == "avg":
                            s = sum(taps)
                            acc = s if acc is None else acc + s
                        else:
                            s = np.max(np.stack(taps), axis=0)
                            acc = s if acc is None else np.maximum(acc, s)
                y[r, :, ph, pw] = acc / (gh * gw) if mode == "avg" else acc
    return y


def roi_align_tests(out):
    x = randn(2, 3, 10, 12)
    rois = np.array([[0.0, 0.0, 9.0, 9.0], [2.2, 1.1, 7.4, 8.6], [-3.0, 4.0, 15.0, 11.5],
                     [5.0, 5.0, 5.5, 5.2], [11.0, 9.0, 14.0, 12.5]], np.float32)
    batch = np.array([0, 1, 1, 0, 1], np.int64)
    for name, mode, oh, ow, ratio, scale, half, opset in (
            ("roialign_half_pixel", "avg", 3, 4, 2, 1.0, True, 16),
            ("roialign_output_half_pixel_scale", "avg", 2, 2, 3, 0.5, False, 16),
            ("roialign_max", "max", 3, 3, 2, 1.0, True, 16),
            ("roialign_opset13_default_coordinates", "avg", 2, 3, 1, 1.0, False, 13)):
        y = roi_align(x, rois, batch, mode, oh, ow, ratio, scale, half)
        if mode == "avg":
            boxes = torch.from_numpy(np.concatenate([batch[:, None].astype(np.float32), rois], 1))
            agree(y, torchvision.ops.roi_align(torch.from_numpy(x), boxes, (oh, ow), scale, ratio,
                                               aligned=half).numpy(), name)
        attrs = dict(mode=mode, output_height=oh, output_width=ow, sampling_ratio=ratio,
                     spatial_scale=scale)
        if opset >= 16:
            attrs["coordinate_transformation_mode"] = "half_pixel" if half else "output_half_pixel"
        node = helper.make_node("RoiAlign", ["x", "rois", "batch_indices"], ["y"], **attrs)
        write(out, name, [node], [("x", x), ("rois", rois), ("batch_indices", batch)],
              [("y", y)], opset)


# --- MaxRoiPool ---

def max_roi_pool(x, rois, pooled, scale):
    """Caffe's RoIPool as onnxruntime's MaxRoiPool: corners rounded half away
    from zero, bins [floor(i * bin), ceil((i + 1) * bin)) clipped to the
    image, an empty bin 0."""
    c, h, w = x.shape[1:]
    ph, pw = pooled
    y = np.zeros((len(rois), c, ph, pw), np.float32)

    def rnd(v):
        return int(math.floor(v + 0.5)) if v >= 0 else -int(math.floor(-v + 0.5))
    for r, roi in enumerate(rois.astype(np.float32)):
        b = int(roi[0])
        sw, sh, ew, eh = (rnd(float(v * np.float32(scale))) for v in roi[1:])
        rh, rw = max(eh - sh + 1, 1), max(ew - sw + 1, 1)
        bh, bw = np.float32(rh) / np.float32(ph), np.float32(rw) / np.float32(pw)
        for i in range(ph):
            for j in range(pw):
                hs = min(max(int(math.floor(np.float32(i) * bh)) + sh, 0), h)
                he = min(max(int(math.ceil(np.float32(i + 1) * bh)) + sh, 0), h)
                ws = min(max(int(math.floor(np.float32(j) * bw)) + sw, 0), w)
                we = min(max(int(math.ceil(np.float32(j + 1) * bw)) + sw, 0), w)
                if he > hs and we > ws:
                    y[r, :, i, j] = x[b, :, hs:he, ws:we].max(axis=(1, 2))
    return y


def max_roi_pool_tests(out):
    x = randn(2, 3, 8, 9)
    rois = np.array([[0, 0.0, 0.0, 8.0, 7.0], [1, 1.4, 2.5, 6.6, 5.5], [1, -2.0, 3.0, 12.0, 9.0],
                     [0, 4.0, 4.0, 4.0, 4.0], [1, 20.0, 20.0, 24.0, 24.0]], np.float32)
    for name, pooled, scale in (("maxroipool_2x3", [2, 3], 1.0),
                                ("maxroipool_scaled", [3, 3], 0.5)):
        y = max_roi_pool(x, rois, pooled, scale)
        agree(y, torchvision.ops.roi_pool(torch.from_numpy(x), torch.from_numpy(rois), pooled,
                                          scale).numpy(), name)
        node = helper.make_node("MaxRoiPool", ["x", "rois"], ["y"], pooled_shape=pooled,
                                spatial_scale=scale)
        write(out, name, [node], [("x", x), ("rois", rois)], [("y", y)], 13)


# --- SequenceMap (17): Debian's tests feed sequences as graph inputs, which
# weft's static graphs cannot take; these build the sequences inside. ---

def sequence_map_tests(out):
    body_input = lambda n, t=F32: helper.make_tensor_value_info(n, t, None)
    x = randn(4, 3)
    b = randn(3)
    # Each row block plus the tensor b, joined again.
    body = helper.make_graph([helper.make_node("Add", ["xi", "bi"], ["yi"])], "add",
                             [body_input("xi"), body_input("bi")], [body_input("yi")])
    nodes = [helper.make_node("SplitToSequence", ["x", "split"], ["s"], axis=0),
             helper.make_node("SequenceMap", ["s", "b"], ["m"], body=body),
             helper.make_node("ConcatFromSequence", ["m"], ["y"], axis=0)]
    write(out, "sequence_map_sequence_and_tensor", nodes, [("x", x), ("b", b)], [("y", x + b)], 17,
          inits=[("split", np.array([1, 2, 1], np.int64))])
    # Two sequences of one length, two outputs: products stacked, and each
    # element's shape (an int64 output).
    a, c = randn(2, 5), randn(3, 5)
    body = helper.make_graph(
        [helper.make_node("Mul", ["p", "q"], ["r"]), helper.make_node("Shape", ["p"], ["t"])],
        "mul_shape", [body_input("p"), body_input("q")],
        [body_input("r"), body_input("t", I64)])
    nodes = [helper.make_node("SplitToSequence", ["a"], ["sa"], axis=0, keepdims=0),
             helper.make_node("Slice", ["c", "starts", "ends"], ["c2"]),
             helper.make_node("SplitToSequence", ["c2"], ["sc"], axis=0, keepdims=0),
             helper.make_node("SequenceMap", ["sa", "sc"], ["products", "shapes"], body=body),
             helper.make_node("ConcatFromSequence", ["products"], ["y"], axis=0, new_axis=1),
             helper.make_node("ConcatFromSequence", ["shapes"], ["z"], axis=0)]
    write(out, "sequence_map_two_sequences", nodes, [("a", a), ("c", c)],
          [("y", a * c[1:]), ("z", np.array([5, 5], np.int64))], 17,
          inits=[("starts", np.array([1], np.int64)), ("ends", np.array([3], np.int64))])


def main():
    out = sys.argv[1]
    shutil.rmtree(os.path.join(out, "node"), ignore_errors=True)
    for make in (group_norm_tests, center_crop_pad_tests, affine_grid_tests, col2im_tests,
                 det_tests, roi_align_tests, max_roi_pool_tests, sequence_map_tests):
        make(out)
    print("make_node_tests: wrote %d tests to %s"
          % (len(os.listdir(os.path.join(out, "node"))), os.path.join(out, "node")))


if __name__ == "__main__":
    main()
