"""Gradient cases of the ops weft's importer gained with weft.rem, weft.topk
and the flattened gathers and scatters (Mod, TopK, CumSum, Celu, Asinh,
Sinh, DepthToSpace, ScatterND, GatherND, NegativeLogLikelihoodLoss, cubic
Resize) and of training-mode BatchNormalization and Dropout, which check_gradients.py
runs (its case(), node() and i64() are passed in). Every case draws from a generator of its own, so adding or
moving cases leaves the others' values alone."""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from weft_tools import weft_dropout_mask  # noqa: E402


def distinct(rng, *shape):
    """A permutation of well separated values: no ties to break."""
    n = int(np.prod(shape))
    return (rng.permutation(n).astype(np.float32) / n * 4 - 2).reshape(shape)


def define(case, node, i64):
    g = "import_ops"
    topk_rng = np.random.RandomState(47)
    labels = i64([1, 0, 3, 2, 3])
    # fmod: quotients kept 0.2 or more from an integer, where the remainder
    # jumps; da = g, db = -g trunc(a / b) (b broadcast: summed).
    # (Its own generator: the cases after it keep their values.)
    fmod_rng = np.random.RandomState(11)
    fmod_b = (fmod_rng.choice([-1, 1], 3) * fmod_rng.uniform(0.5, 1.5, 3)).astype(np.float32)
    fmod_q = (fmod_rng.randint(-4, 5, (2, 3))
              + fmod_rng.choice([-1, 1], (2, 3)) * fmod_rng.uniform(0.2, 0.8, (2, 3)))
    case("mod_fmod_broadcast", {"a": (fmod_q * fmod_b).astype(np.float32), "b": fmod_b},
         [node("Mod", ["a", "b"], "y", fmod=1)], lambda e: torch.fmod(e["a"], e["b"]), group=g)
    # TopK: the values' gradients go back to where they came from (distinct
    # values: no ties to break), along the last axis and along axis 0, the
    # largest and the smallest; the indices (also an output) have none.
    case("topk_largest_last_axis", {"x": distinct(topk_rng, 3, 5)},
         [node("TopK", ["x", "k"], ["y", "i"], axis=-1)],
         lambda e: torch.topk(e["x"], 2, dim=-1).values, consts={"k": i64([2])}, group=g)
    case("topk_smallest_axis0", {"x": distinct(topk_rng, 4, 2, 3)},
         [node("TopK", ["x", "k"], ["y", "i"], axis=0, largest=0)],
         lambda e: torch.topk(e["x"], 3, dim=0, largest=False).values,
         consts={"k": i64([3])}, group=g)
    # Composed at import: CumSum (shifted sums; reversed by gathers), Celu,
    # the hyperbolic functions, DepthToSpace (reshapes and a transpose).
    comp_rng = np.random.RandomState(31)
    case("cumsum_axis1", {"x": comp_rng.uniform(-1, 1, (2, 5)).astype(np.float32)},
         [node("CumSum", ["x", "ax"], "y")], lambda e: torch.cumsum(e["x"], 1),
         consts={"ax": i64(1)}, group=g)
    case("cumsum_reverse_exclusive", {"x": comp_rng.uniform(-1, 1, (6, 2)).astype(np.float32)},
         [node("CumSum", ["x", "ax"], "y", reverse=1, exclusive=1)],
         lambda e: torch.flip(torch.cumsum(torch.flip(e["x"], [0]), 0), [0]) - e["x"],
         consts={"ax": i64(0)}, group=g)
    case("celu", {"x": comp_rng.uniform(-2, 2, (2, 3)).astype(np.float32)},
         [node("Celu", ["x"], "y", alpha=0.7)], lambda e: F.celu(e["x"], alpha=0.7), group=g)
    case("asinh_sinh", {"x": comp_rng.uniform(-2, 2, (2, 3)).astype(np.float32)},
         [node("Asinh", ["x"], "a"), node("Sinh", ["x"], "b"), node("Add", ["a", "b"], "y")],
         lambda e: torch.asinh(e["x"]) + torch.sinh(e["x"]), group=g)
    case("depth_to_space_crd", {"x": comp_rng.uniform(-1, 1, (1, 8, 2, 3)).astype(np.float32)},
         [node("DepthToSpace", ["x"], "y", blocksize=2, mode="CRD")],
         lambda e: F.pixel_shuffle(e["x"], 2), group=g)
    # ScatterND with computed data and updates (an in-place assignment,
    # constant rows: a gather and a constant mask), and GatherND with a
    # batch dim (a gather of rows).
    nd_rng = np.random.RandomState(43)
    case("scatternd_rows", {"d": nd_rng.uniform(-1, 1, (4, 3)).astype(np.float32),
                            "u": nd_rng.uniform(-1, 1, (2, 3)).astype(np.float32)},
         [node("ScatterND", ["d", "idx", "u"], "y")],
         lambda e: e["d"].index_put((torch.tensor([3, 1]),), e["u"]),
         consts={"idx": i64([[3], [1]])}, group=g)
    case("gathernd_batch_dims", {"d": nd_rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32)},
         [node("GatherND", ["d", "idx"], "y", batch_dims=1)],
         lambda e: torch.stack([e["d"][0, 2], e["d"][1, 0]]),
         consts={"idx": i64([[2], [0]])}, group=g)
    # NegativeLogLikelihoodLoss: of any input, a gather of the flattened
    # input (weights and an ignored class: the mean over the weights); over a
    # LogSoftmax along the classes, one softmax_cross_entropy of its input.
    # (Their own generator: the cases after them keep their values.)
    nll_rng = np.random.RandomState(23)
    case("nll_weights_ignore_mean", {"x": nll_rng.uniform(-2, 2, (5, 4)).astype(np.float32)},
         [node("NegativeLogLikelihoodLoss", ["x", "labels", "frozen.w"], "y", ignore_index=3)],
         lambda e: F.nll_loss(e["x"], e["labels"], weight=e["frozen.w"], ignore_index=3),
         consts={"labels": labels,
                 "frozen.w": nll_rng.uniform(0.5, 2, 4).astype(np.float32)}, group=g)
    case("nll_kdim_none", {"x": nll_rng.uniform(-2, 2, (2, 3, 4)).astype(np.float32)},
         [node("NegativeLogLikelihoodLoss", ["x", "labels"], "y", reduction="none")],
         lambda e: F.nll_loss(e["x"], e["labels"], reduction="none"),
         consts={"labels": i64([[0, 1, 2, 2], [1, 0, 0, 2]])}, group=g)
    case("nll_of_log_softmax_sum", {"x": nll_rng.uniform(-2, 2, (5, 4)).astype(np.float32)},
         [node("LogSoftmax", ["x"], "lp", axis=1),
          node("NegativeLogLikelihoodLoss", ["lp", "labels"], "y", reduction="sum")],
         lambda e: F.nll_loss(F.log_softmax(e["x"], 1), e["labels"], reduction="sum"),
         consts={"labels": labels}, group=g)
    # Bicubic (PyTorch's: a = -0.75, rows past the edges repeat the edge),
    # up along one axis and down along the other.
    cubic_rng = np.random.RandomState(41)
    case("resize_bicubic", {"x": cubic_rng.uniform(-1, 1, (1, 2, 4, 6)).astype(np.float32)},
         [node("Resize", ["x", "", "", "frozen.sizes"], "y", mode="cubic",
               coordinate_transformation_mode="pytorch_half_pixel")],
         lambda e: F.interpolate(e["x"], size=(7, 4), mode="bicubic", align_corners=False),
         consts={"frozen.sizes": i64([1, 2, 7, 4])}, group=g)
    case("resize_bicubic_align_corners", {"x": cubic_rng.uniform(-1, 1, (1, 1, 3, 5)).astype(np.float32)},
         [node("Resize", ["x", "", "", "frozen.sizes"], "y", mode="cubic",
               coordinate_transformation_mode="align_corners")],
         lambda e: F.interpolate(e["x"], size=(6, 5), mode="bicubic", align_corners=True),
         consts={"frozen.sizes": i64([1, 1, 6, 5])}, group=g)
    # Training-mode BatchNormalization: the batch's statistics depend on x,
    # so x's gradient has the terms through the mean and the variance too
    # (PyTorch's training-mode batch_norm); the running statistics are
    # constants (the update is a training step's business, not a gradient).
    bn_rng = np.random.RandomState(53)

    def batch_norm(e, eps):
        return F.batch_norm(e["x"], e["frozen.rm"].clone(), e["frozen.rv"].clone(),
                            e["s"], e["b"], training=True, eps=eps)
    bn_consts = {"frozen.rm": bn_rng.uniform(-1, 1, 3).astype(np.float32),
                 "frozen.rv": bn_rng.uniform(0.5, 2, 3).astype(np.float32)}
    case("batchnorm_training_2d",
         {"x": bn_rng.uniform(-2, 2, (3, 3, 2, 2)).astype(np.float32),
          "s": bn_rng.uniform(0.5, 1.5, 3).astype(np.float32),
          "b": bn_rng.uniform(-1, 1, 3).astype(np.float32)},
         [node("BatchNormalization", ["x", "s", "b", "frozen.rm", "frozen.rv"], "y",
               training_mode=1, epsilon=1e-3)],
         lambda e: batch_norm(e, 1e-3), consts=bn_consts, group=g)
    case("batchnorm_training_1d",
         {"x": bn_rng.uniform(-2, 2, (5, 3)).astype(np.float32),
          "s": bn_rng.uniform(0.5, 1.5, 3).astype(np.float32),
          "b": bn_rng.uniform(-1, 1, 3).astype(np.float32)},
         [node("BatchNormalization", ["x", "s", "b", "frozen.rm", "frozen.rv"], "y",
               training_mode=1)],
         lambda e: batch_norm(e, 1e-5), consts=bn_consts, group=g)
    # Training-mode Dropout: the gradient goes through the kept elements,
    # scaled like them. An --emit-gradients compile draws step 0's masks,
    # which the reference applies (weft_tools.weft_dropout_mask; the only
    # dropout of its model: stream 0).
    drop_rng = np.random.RandomState(59)
    drop_shape = (4, 6)
    drop_mask = torch.from_numpy(weft_dropout_mask(drop_shape, 0.3, 0, 0, seed=5))
    case("dropout_training", {"x": drop_rng.uniform(-2, 2, drop_shape).astype(np.float32)},
         [node("Dropout", ["x", "frozen.ratio", "frozen.train"], "y", seed=5)],
         lambda e: e["x"] * drop_mask / (1 - np.float32(0.3)),
         consts={"frozen.ratio": np.array(0.3, np.float32),
                 "frozen.train": np.array(True)}, group="dropout")
