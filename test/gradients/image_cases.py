"""Gradient cases of the ops weft builds from its own at import on
2026-11-28: GroupNormalization (opsets 18 and 21), CenterCropPad, Col2Im,
AffineGrid, Det, RoiAlign and MaxRoiPool. check_gradients.py runs them (its
case() and node() are passed in); each draws from a generator of its own."""
import numpy as np
import torch
import torch.nn.functional as F
import torchvision


def roi_align(x, rois, batch, mode, oh, ow, ratio, scale, half):
    """RoiAlign as onnxruntime samples it, in the tensors' dtype (float64
    here), differentiable in x and rois."""
    c, h, w = x.shape[1:]
    out = []
    offset = 0.5 if half else 0.0
    for r in range(rois.shape[0]):
        sw, sh = rois[r, 0] * scale - offset, rois[r, 1] * scale - offset
        rw, rh = rois[r, 2] * scale - offset - sw, rois[r, 3] * scale - offset - sh
        if not half:
            rw, rh = torch.clamp(rw, min=1.0), torch.clamp(rh, min=1.0)
        bh, bw = rh / oh, rw / ow
        image = x[int(batch[r])]
        bins = []
        for ph in range(oh):
            for pw in range(ow):
                acc = None
                for iy in range(ratio):
                    yy = sh + ph * bh + (iy + 0.5) * bh / ratio
                    for ix in range(ratio):
                        xx = sw + pw * bw + (ix + 0.5) * bw / ratio
                        if yy < -1 or yy > h or xx < -1 or xx > w:
                            taps = [torch.zeros(c, dtype=x.dtype)] * 4
                        else:
                            yv, xv = torch.clamp(yy, min=0.0), torch.clamp(xx, min=0.0)
                            yl, xl = int(yv), int(xv)
                            if yl >= h - 1:
                                yl = yh = h - 1
                                yv = yv * 0 + yl
                            else:
                                yh = yl + 1
                            if xl >= w - 1:
                                xl = xh = w - 1
                                xv = xv * 0 + xl
                            else:
                                xh = xl + 1
                            ly, lx = yv - yl, xv - xl
                            hy, hx = 1 - ly, 1 - lx
                            taps = [hy * hx * image[:, yl, xl], hy * lx * image[:, yl, xh],
                                    ly * hx * image[:, yh, xl], ly * lx * image[:, yh, xh]]
                        if mode == "avg":
                            s = taps[0] + taps[1] + taps[2] + taps[3]
                            acc = s if acc is None else acc + s
                        else:
                            s = torch.max(torch.stack(taps), dim=0).values
                            acc = s if acc is None else torch.maximum(acc, s)
                bins.append(acc / (ratio * ratio) if mode == "avg" else acc)
        out.append(torch.stack(bins, dim=1).reshape(c, oh, ow))
    return torch.stack(out)


def define(case, node, i64):
    g = "image"
    rng = np.random.RandomState(59)

    def uniform(*shape, low=-1.0, high=1.0):
        return rng.uniform(low, high, size=shape).astype(np.float32)

    # GroupNormalization: opset 18's scale and bias per group, 21's per
    # channel.
    case("group_normalization_18", {"x": uniform(2, 4, 3, low=-2, high=2),
                                     "scale": uniform(2), "bias": uniform(2)},
         [node("GroupNormalization", ["x", "scale", "bias"], "y", num_groups=2)],
         lambda e: F.group_norm(e["x"], 2, e["scale"].repeat_interleave(2),
                                e["bias"].repeat_interleave(2)), group=g + "18", opset=18)
    case("group_normalization_21", {"x": uniform(2, 6, 2, 2, low=-2, high=2),
                                     "scale": uniform(6), "bias": uniform(6)},
         [node("GroupNormalization", ["x", "scale", "bias"], "y", num_groups=3)],
         lambda e: F.group_norm(e["x"], 3, e["scale"], e["bias"]), group=g + "21", opset=21)

    # CenterCropPad: a crop and a pad.
    case("center_crop_pad", {"x": uniform(5, 3)},
         [node("CenterCropPad", ["x", "sizes"], "y")],
         lambda e: F.pad(e["x"][1:4], (1, 2)), consts={"sizes": i64([3, 6])}, group=g + "18",
         opset=18)

    # Col2Im: overlapping blocks (each pixel sums several columns' terms).
    case("col2im", {"cols": uniform(1, 2 * 4, 15)},
         [node("Col2Im", ["cols", "image", "block"], "y", strides=[1, 2], pads=[1, 1, 1, 1])],
         lambda e: F.fold(e["cols"], (4, 5), (2, 2), padding=(1, 1), stride=(1, 2)),
         consts={"image": i64([4, 5]), "block": i64([2, 2])}, group=g + "18", opset=18)

    # AffineGrid: the grid is linear in theta.
    for align in (0, 1):
        case("affine_grid_align_%d" % align, {"theta": uniform(2, 2, 3)},
             [node("AffineGrid", ["theta", "size"], "y", align_corners=align)],
             lambda e, align=align: F.affine_grid(e["theta"], [2, 1, 3, 4],
                                                  align_corners=bool(align)),
             consts={"size": i64([2, 1, 3, 4])}, group=g + "20", opset=20)

    # Det: det(A) A^-T, with row swaps (a zero leading entry).
    swapped = uniform(2, 3, 3)
    swapped[0, 0, 0] = 0.0
    case("det", {"x": swapped}, [node("Det", ["x"], "y")], lambda e: torch.det(e["x"]),
         group=g)
    case("det_4x4", {"x": uniform(4, 4, low=-2, high=2)}, [node("Det", ["x"], "y")],
         lambda e: torch.det(e["x"]), group=g)

    # RoiAlign: the gradient of X through the bilinear taps, and of the rois
    # through the taps' weights (torchvision's has none for the rois).
    x = uniform(2, 2, 6, 7, low=-2, high=2)
    rois = np.array([[0.4, 0.3, 5.1, 4.6], [1.3, 2.2, 6.4, 5.7], [-1.6, 0.8, 3.3, 7.4]],
                    np.float32)
    batch = i64([0, 1, 1])
    case("roi_align_avg", {"x": x, "rois": rois},
         [node("RoiAlign", ["x", "rois", "batch"], "y", output_height=2, output_width=3,
               sampling_ratio=2, spatial_scale=1.0)],
         lambda e: roi_align(e["x"], e["rois"], e["batch"], "avg", 2, 3, 2, 1.0, True),
         consts={"batch": batch}, group=g + "16", opset=16)
    case("roi_align_max_scaled", {"x": x, "rois": rois * 2},
         [node("RoiAlign", ["x", "rois", "batch"], "y", mode="max", output_height=2,
               output_width=2, sampling_ratio=2, spatial_scale=0.5,
               coordinate_transformation_mode="output_half_pixel")],
         lambda e: roi_align(e["x"], e["rois"], e["batch"], "max", 2, 2, 2, 0.5, False),
         consts={"batch": batch}, group=g + "16", opset=16)

    # MaxRoiPool: each bin's largest element takes the gradient (distinct
    # values: no ties); the rounded corners give the rois none.
    distinct = (rng.permutation(2 * 2 * 6 * 6).astype(np.float32) / 36 - 2).reshape(2, 2, 6, 6)
    pool_rois = np.array([[0, 0.2, 0.6, 4.4, 5.2], [1, 1.5, 0.0, 5.5, 3.4]], np.float32)
    case("max_roi_pool", {"x": distinct},
         [node("MaxRoiPool", ["x", "frozen.rois"], "y", pooled_shape=[2, 2])],
         lambda e: torchvision.ops.roi_pool(e["x"], e["frozen.rois"], [2, 2], 1.0),
         consts={"frozen.rois": pool_rois}, group=g)
