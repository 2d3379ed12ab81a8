"""How run_conformance.py judges outputs that exact-or-close comparison
cannot: bfloat16 bits (within 1 ulp) and the random outputs of training-mode
Dropout and of Bernoulli, whose draws no two implementations share."""
import re

import numpy as np


def compare_bf16(actual, expected):
    """bfloat16 tensors (as uint16 bits): equal within 1 ulp, NaNs at the same places.

    ONNX 1.12's data casts float -> bfloat16 by truncation; later ONNX and
    PyTorch round to nearest even; the opset-13 spec names no rounding."""
    a = np.asarray(actual)
    e = np.asarray(expected)
    if a.shape != e.shape:
        return False, "shape %s, expected %s" % (a.shape, e.shape)
    if a.dtype.itemsize != 2 or e.dtype.itemsize != 2:
        return False, "dtype %s, expected bfloat16 bits (%s)" % (a.dtype, e.dtype)
    a = a.view(np.uint16).astype(np.int64)
    e = e.view(np.uint16).astype(np.int64)
    nan = lambda b: ((b & 0x7F80) == 0x7F80) & ((b & 0x7F) != 0)
    if (nan(a) != nan(e)).any():
        return False, "bfloat16 NaN positions differ"
    bad = (np.abs(a - e) > 1) & ~nan(e)
    if bad.any():
        idx = np.unravel_index(int(np.argmax(bad)), bad.shape)
        return False, "%d of %d bfloat16 elements differ by more than 1 ulp; first at %s: " \
            "bits 0x%04x, expected 0x%04x" % (int(bad.sum()), bad.size,
                                              tuple(int(i) for i in idx), a[idx], e[idx])
    return True, "within 1 bfloat16 ulp"


# Training-mode Dropout with a ratio above 0 draws random masks: weft's are
# Philox draws of each element's position (runtime/kernels/cpu/DropoutDraw.h),
# the reference's numpy's generator, and no two implementations share them.
# These tests check what Dropout guarantees instead: every element of y is
# 0 or x / (1 - ratio) (the scale read off the reference's kept elements),
# the mask output says which, and the kept count is within 5 standard
# deviations of (1 - ratio) of the elements.
RANDOM_DROPOUT_RE = re.compile(r"^test_training_dropout(?!_zero_ratio)")


def compare_random_dropout(x, got, outputs, expected):
    problems = []
    ref_y = expected[0]
    kept_ref = ref_y != 0
    if not kept_ref.any():
        return ["the reference keeps no element: no scale to check against"]
    scale = float(np.median(ref_y[kept_ref] / x[kept_ref]))
    y = got.get(outputs[0])
    if y is None:
        return problems
    if y.shape != ref_y.shape or y.dtype != ref_y.dtype:
        return ["output '%s': %s%s, expected %s%s" % (outputs[0], y.dtype, list(y.shape),
                                                    ref_y.dtype, list(ref_y.shape))]
    kept = y != 0
    scaled_ok = np.allclose(y[kept], x[kept] * scale, rtol=1e-5, atol=0)
    if not scaled_ok:
        problems.append("output '%s': kept elements are not x * %.6g" % (outputs[0], scale))
    if len(outputs) > 1 and outputs[1] in got:
        mask = got[outputs[1]]
        if mask.dtype != np.bool_ or not np.array_equal(mask[x != 0], kept[x != 0]):
            problems.append("output '%s' does not mark the kept elements of '%s'"
                            % (outputs[1], outputs[0]))
    n, p = x.size, 1.0 / scale
    if abs(int(kept.sum()) - n * p) > 5 * np.sqrt(n * p * (1 - p)) + 1:
        problems.append("kept %d of %d elements; expected about %.1f" % (kept.sum(), n, n * p))
    return problems


# Bernoulli draws too (weft.random's uniform numbers, RandomDraw.h): every
# output element must be 0 or 1 in the reference's dtype and shape, and the
# count of ones within 5 standard deviations of the sum of the input's
# probabilities.
BERNOULLI_RE = re.compile(r"^test_bernoulli")


def compare_bernoulli(p, got, outputs, expected):
    ref = expected[0]
    y = got.get(outputs[0])
    if y is None:
        return []
    if y.shape != ref.shape or y.dtype != ref.dtype:
        return ["output '%s': %s%s, expected %s%s" % (outputs[0], y.dtype, list(y.shape),
                                                    ref.dtype, list(ref.shape))]
    values = y.astype(np.float64)
    if not np.all((values == 0) | (values == 1)):
        return ["output '%s' holds values other than 0 and 1" % outputs[0]]
    probs = np.asarray(p, np.float64).ravel()
    mean, sd = probs.sum(), np.sqrt((probs * (1 - probs)).sum())
    ones = values.sum()
    if abs(ones - mean) > 5 * sd + 1:
        return ["%d ones of %d; expected about %.1f" % (ones, values.size, mean)]
    return []
