//===- ImportLinalg.cpp - Matrix products, convolution and pooling --------===//
//
// MatMul's 1-D operands become 2-D matrices and back (numpy semantics); Gemm
// becomes weft.matmul with transpose flags, scaled by alpha, plus beta * C.
// Conv and pooling get their auto_pad turned into explicit pads.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImportExpr.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/WeftOps.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

//===----------------------------------------------------------------------===//
// MatMul, Gemm
//===----------------------------------------------------------------------===//

Value onnx_import::buildMatMul(NodeImporter &imp, Value lhs, Value rhs) {
  if (!lhs || !rhs)
    return {};
  int64_t lhsRank = getRank(lhs), rhsRank = getRank(rhs);
  if (lhsRank == 0 || rhsRank == 0) {
    (void)imp.emitError(imp.getOpType() + " of a scalar (" +
                        formatType(lhs.getType()) + ", " +
                        formatType(rhs.getType()) + ")");
    return {};
  }
  // numpy: a 1-D lhs is a row vector, a 1-D rhs a column vector, and the
  // added dimension is dropped from the result.
  if (lhsRank == 1)
    lhs = imp.createReshape(lhs, {1, getShape(lhs)[0]});
  if (rhsRank == 1)
    rhs = imp.createReshape(rhs, {getShape(rhs)[0], 1});
  if (!lhs || !rhs)
    return {};
  BoolAttr no = imp.getBuilder().getBoolAttr(false);
  Value result = imp.createInferred<MatMulOp>(lhs, rhs, no, no);
  if (!result || (lhsRank != 1 && rhsRank != 1))
    return result;
  SmallVector<int64_t> shape(getShape(result));
  if (rhsRank == 1)
    shape.erase(shape.end() - 1);
  if (lhsRank == 1)
    shape.erase(shape.end() - (rhsRank == 1 ? 1 : 2));
  return imp.createReshape(result, shape);
}

LogicalResult onnx_import::importMatMul(NodeImporter &imp) {
  return imp.setResult(
      buildMatMul(imp, imp.getInput(0, "A"), imp.getInput(1, "B")));
}

LogicalResult onnx_import::importGemm(NodeImporter &imp) {
  Value a = imp.getInput(0, "A");
  Value b = imp.getInput(1, "B");
  Value c = imp.getOptionalInput(2);
  if (!a || !b)
    return failure();
  if (getRank(a) != 2 || getRank(b) != 2)
    return imp.emitError("inputs A and B must be matrices, not " +
                         formatType(a.getType()) + " and " +
                         formatType(b.getType()));
  bool transA = imp.getIntAttr("transA", 0) != 0;
  bool transB = imp.getIntAttr("transB", 0) != 0;
  double alpha = imp.getFloatAttr("alpha", 1.0);
  double beta = imp.getFloatAttr("beta", 1.0);
  OpBuilder &builder = imp.getBuilder();
  Value result = imp.createInferred<MatMulOp>(a, b, builder.getBoolAttr(transA),
                                              builder.getBoolAttr(transB));
  if (!result)
    return failure();
  SmallVector<int64_t> shape(getShape(result));
  Type elementType = getElementType(result);
  if (alpha != 1.0) {
    Value scale = imp.createScalar(elementType, alpha);
    result = scale ? imp.createInferred<MulOp>(result, scale) : Value();
    if (!result)
      return failure();
  }
  if (c && beta != 0.0) {
    if (beta != 1.0) {
      Value scale = imp.createScalar(getElementType(c), beta);
      c = scale ? imp.createInferred<MulOp>(c, scale) : Value();
      if (!c)
        return failure();
    }
    result = imp.createInferred<AddOp>(result, c);
    if (!result)
      return failure();
    if (getShape(result) != ArrayRef<int64_t>(shape))
      return imp.emitError("input C (" + formatType(c.getType()) +
                           ") does not broadcast to the product's shape " +
                           formatShape(shape));
  }
  imp.setOutput(0, result);
  return success();
}

//===----------------------------------------------------------------------===//
// Windows of Conv and pooling
//===----------------------------------------------------------------------===//

namespace {
/// Window of a convolution or pooling over the s spatial dims of an NC...
/// tensor; `pads` holds the s begins, then the s ends.
struct Window {
  SmallVector<int64_t> kernel, strides, pads, dilations;
};
} // namespace

/// Reads strides, pads, dilations and auto_pad for `kernel`, turning auto_pad
/// into explicit pads.
static std::optional<Window> readWindow(NodeImporter &imp,
                                        ArrayRef<int64_t> inputShape,
                                        ArrayRef<int64_t> kernel) {
  size_t spatial = kernel.size();
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  w.strides = imp.getIntsAttr("strides", SmallVector<int64_t>(spatial, 1));
  w.dilations = imp.getIntsAttr("dilations", SmallVector<int64_t>(spatial, 1));
  w.pads = imp.getIntsAttr("pads", SmallVector<int64_t>(2 * spatial, 0));
  auto badList = [&](StringRef name, ArrayRef<int64_t> values, size_t size,
                     int64_t min) {
    if (values.size() == size &&
        llvm::all_of(values, [&](int64_t v) { return v >= min; }))
      return false;
    (void)imp.emitError("attribute '" + name + "' = " + formatShape(values) +
                        " should hold " + std::to_string(size) +
                        " values >= " + std::to_string(min));
    return true;
  };
  if (imp.hasError() || badList("kernel_shape", w.kernel, spatial, 1) ||
      badList("strides", w.strides, spatial, 1) ||
      badList("dilations", w.dilations, spatial, 1) ||
      badList("pads", w.pads, 2 * spatial, 0))
    return std::nullopt;

  std::string autoPad = imp.getStringAttr("auto_pad", "NOTSET");
  if (autoPad == "NOTSET")
    return w;
  if (autoPad == "VALID") {
    w.pads.assign(2 * spatial, 0);
    return w;
  }
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER") {
    (void)imp.emitUnsupportedAttr("auto_pad", "'" + autoPad + "'",
                                  "expected NOTSET, VALID, SAME_UPPER or "
                                  "SAME_LOWER");
    return std::nullopt;
  }
  // SAME: the output has ceil(in / stride) elements; the padding that needs
  // is split evenly, the odd element going to the end (SAME_UPPER) or to the
  // beginning (SAME_LOWER).
  for (size_t i = 0; i < spatial; ++i) {
    int64_t in = inputShape[2 + i];
    int64_t out = (in + w.strides[i] - 1) / w.strides[i];
    int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
    int64_t total =
        std::max<int64_t>(0, (out - 1) * w.strides[i] + extent - in);
    int64_t small = total / 2, large = total - total / 2;
    w.pads[i] = autoPad == "SAME_UPPER" ? small : large;
    w.pads[spatial + i] = autoPad == "SAME_UPPER" ? large : small;
  }
  return w;
}

/// The input X of Conv and pooling: an NC... tensor with spatial dims.
static Value getWindowedInput(NodeImporter &imp) {
  Value input = imp.getInput(0, "X");
  if (input && getRank(input) < 3) {
    (void)imp.emitError("input X (" + formatType(input.getType()) +
                        ") needs at least one spatial dimension (N, C, D...)");
    return {};
  }
  return input;
}

/// The spatial kernel of weight W [M, C, K...] of Conv and ConvTranspose,
/// checked against X's rank and the kernel_shape attribute.
static std::optional<ArrayRef<int64_t>> getKernel(NodeImporter &imp,
                                                  Value input, Value weight) {
  if (!input || !weight)
    return std::nullopt;
  if (getRank(weight) != getRank(input)) {
    (void)imp.emitError("weight W (" + formatType(weight.getType()) +
                        ") must have the rank of X (" +
                        formatType(input.getType()) + ")");
    return std::nullopt;
  }
  ArrayRef<int64_t> kernel = getShape(weight).drop_front(2);
  if (imp.hasAttr("kernel_shape") &&
      imp.getIntsAttr("kernel_shape") != SmallVector<int64_t>(kernel)) {
    (void)imp.emitError("attribute 'kernel_shape' = " +
                        formatShape(imp.getIntsAttr("kernel_shape")) +
                        " differs from the weight's kernel " +
                        formatShape(kernel));
    return std::nullopt;
  }
  return kernel;
}

Value onnx_import::buildConv(NodeImporter &imp, Value input, Value weight,
                             Value bias) {
  std::optional<ArrayRef<int64_t>> kernel = getKernel(imp, input, weight);
  if (!kernel)
    return {};
  std::optional<Window> w = readWindow(imp, getShape(input), *kernel);
  if (!w)
    return {};
  OpBuilder &builder = imp.getBuilder();
  return imp.createInferred<ConvOp>(
      input, weight, bias, builder.getDenseI64ArrayAttr(w->strides),
      builder.getDenseI64ArrayAttr(w->pads),
      builder.getDenseI64ArrayAttr(w->dilations),
      builder.getI64IntegerAttr(imp.getIntAttr("group", 1)));
}

LogicalResult onnx_import::importConv(NodeImporter &imp) {
  Value input = getWindowedInput(imp);
  Value weight = imp.getInput(1, "W");
  Value bias = imp.getOptionalInput(2);
  return imp.setResult(buildConv(imp, input, weight, bias));
}

/// ConvTranspose is weft.conv_grad_input: the gradient of a convolution
/// from [N, M, out...] to [N, C, in...] with the same attributes, read
/// backwards (W is [C, M/group, K...] in both). out comes from the pads and
/// output_padding, or from output_shape / auto_pad, which then set the pads
/// (ONNX's rule: the odd element at the end for SAME_UPPER).
LogicalResult onnx_import::importConvTranspose(NodeImporter &imp) {
  Value input = getWindowedInput(imp);
  Value weight = imp.getInput(1, "W");
  Value bias = imp.getOptionalInput(2);
  std::optional<ArrayRef<int64_t>> kernelOr = getKernel(imp, input, weight);
  if (!kernelOr)
    return failure();
  ArrayRef<int64_t> kernel = *kernelOr;
  ArrayRef<int64_t> inShape = getShape(input), wShape = getShape(weight);
  int64_t group = imp.getIntAttr("group", 1);
  if (group < 1 || wShape[0] != inShape[1] || inShape[1] % group != 0)
    return imp.emitError("weight W (" + formatType(weight.getType()) +
                         ") does not fit X (" + formatType(input.getType()) +
                         ") with group " + Twine(group) +
                         ": W's first dimension must be X's channels, a "
                         "multiple of group");
  size_t spatial = inShape.size() - 2;
  SmallVector<int64_t> ones(spatial, 1), zeros(spatial, 0);
  SmallVector<int64_t> strides = imp.getIntsAttr("strides", ones);
  SmallVector<int64_t> dilations = imp.getIntsAttr("dilations", ones);
  SmallVector<int64_t> outputPadding = imp.getIntsAttr("output_padding", zeros);
  SmallVector<int64_t> pads =
      imp.getIntsAttr("pads", SmallVector<int64_t>(2 * spatial, 0));
  for (auto [name, values, size] :
       {std::make_tuple("strides", &strides, spatial),
        std::make_tuple("dilations", &dilations, spatial),
        std::make_tuple("output_padding", &outputPadding, spatial),
        std::make_tuple("pads", &pads, 2 * spatial)}) {
    int64_t min =
        StringRef(name) == "strides" || StringRef(name) == "dilations" ? 1 : 0;
    if (values->size() != size ||
        llvm::any_of(*values, [&](int64_t v) { return v < min; }))
      return imp.emitError("attribute '" + Twine(name) +
                           "' = " + formatShape(*values) + " should hold " +
                           Twine(size) + " values >= " + Twine(min));
  }
  for (size_t i = 0; i < spatial; ++i)
    if (outputPadding[i] >= std::max(strides[i], dilations[i]))
      return imp.emitError(
          "attribute 'output_padding' = " + formatShape(outputPadding) +
          " must be smaller than the stride or dilation");

  std::string autoPad = imp.getStringAttr("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER")
    return imp.emitUnsupportedAttr("auto_pad", "'" + autoPad + "'",
                                   "expected NOTSET, VALID, SAME_UPPER or "
                                   "SAME_LOWER");
  if (autoPad == "VALID")
    pads.assign(2 * spatial, 0);
  SmallVector<int64_t> requested = imp.getIntsAttr("output_shape");
  if (!requested.empty() && requested.size() != spatial &&
      requested.size() != spatial + 2)
    return imp.emitError(
        "attribute 'output_shape' = " + formatShape(requested) +
        " should hold " + Twine(spatial) + " spatial sizes");
  if (requested.size() == spatial + 2)
    requested.erase(requested.begin(), requested.begin() + 2);
  if (requested.empty() && autoPad.rfind("SAME", 0) == 0)
    for (size_t i = 0; i < spatial; ++i)
      requested.push_back(inShape[2 + i] * strides[i]);

  SmallVector<int64_t> outShape{inShape[0], wShape[1] * group};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t extent = (kernel[i] - 1) * dilations[i] + 1;
    int64_t full =
        strides[i] * (inShape[2 + i] - 1) + outputPadding[i] + extent;
    int64_t out;
    if (!requested.empty()) {
      // ONNX's split of the padding, halves rounded down.
      int64_t total = full - requested[i];
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      int64_t begin = autoPad == "SAME_UPPER" ? half : total - half;
      if (total < 0 && (begin != 0 || -total >= strides[i]))
        return imp.emitError(
            "output size " + Twine(requested[i]) + " of spatial dimension " +
            Twine(i) + " is larger than ConvTranspose produces (" +
            Twine(full) +
            "); only rows added at the end, fewer than the stride, are "
            "supported");
      // A short negative padding at the end adds rows that no input reaches
      // (as output_padding does).
      pads[i] = std::max<int64_t>(begin, 0);
      pads[spatial + i] = std::max<int64_t>(total - begin, 0);
      out = requested[i];
    } else {
      out = full - pads[i] - pads[spatial + i];
    }
    if (out < 1)
      return imp.emitError("pads " + formatShape(pads) +
                           " leave no output in spatial dimension " + Twine(i));
    outShape.push_back(out);
  }
  OpBuilder &builder = imp.getBuilder();
  Value result = imp.create<ConvGradInputOp>(
      getTensorType(input).clone(outShape), input, weight,
      builder.getDenseI64ArrayAttr(strides), builder.getDenseI64ArrayAttr(pads),
      builder.getDenseI64ArrayAttr(dilations),
      builder.getI64IntegerAttr(group));
  if (result && bias) {
    if (getShape(bias) != ArrayRef<int64_t>{outShape[1]})
      return imp.emitError("bias B (" + formatType(bias.getType()) +
                           ") should have one value per output channel (" +
                           Twine(outShape[1]) + ")");
    SmallVector<int64_t> column(outShape.size() - 1, 1);
    column[0] = outShape[1];
    result = imp.createInferred<AddOp>(result, imp.createReshape(bias, column));
  }
  if (!result)
    return failure();
  imp.setOutput(0, result);
  return success();
}

/// The kernel_shape attribute that pooling requires.
static std::optional<SmallVector<int64_t>> getPoolKernel(NodeImporter &imp) {
  if (!imp.hasAttr("kernel_shape")) {
    (void)imp.emitError("missing required attribute 'kernel_shape'");
    return std::nullopt;
  }
  return imp.getIntsAttr("kernel_shape");
}

/// The window of a pooling node over `input`: kernel_shape (required, one
/// entry per spatial dim), strides, pads, dilations and auto_pad.
static std::optional<Window> getPoolWindow(NodeImporter &imp, Value input) {
  std::optional<SmallVector<int64_t>> kernel = getPoolKernel(imp);
  if (!kernel)
    return std::nullopt;
  if (kernel->size() + 2 != getShape(input).size()) {
    (void)imp.emitError("attribute 'kernel_shape' = " + formatShape(*kernel) +
                        " does not match input X (" +
                        formatType(input.getType()) + ")");
    return std::nullopt;
  }
  return readWindow(imp, getShape(input), *kernel);
}

/// MaxPool's Indices output: for each output element the flat position in
/// the whole input (N, C and the spatial dims, row-major) of its window's
/// first maximum. Each tap of the window is a gather of the flattened input
/// at positions fixed at import (padding taps read -inf); a running
/// comparison keeps the first largest tap's position.
static Value maxPoolIndices(NodeImporter &imp, Value input, const Window &w,
                            ArrayRef<int64_t> outShape) {
  Expr e(imp);
  ArrayRef<int64_t> inShape = getShape(input);
  const int64_t spatial = static_cast<int64_t>(w.kernel.size());
  int64_t planes = inShape[0] * inShape[1], plane = 1, outCount = 1, taps = 1;
  for (int64_t d = 0; d < spatial; ++d) {
    plane *= inShape[2 + d];
    outCount *= outShape[2 + d];
    taps *= w.kernel[d];
  }
  OpBuilder &b = imp.getBuilder();
  Type i64 = b.getI64Type();
  SmallVector<int64_t> starts;
  for (int64_t i = 0; i < planes; ++i)
    starts.push_back(i * plane);
  SmallVector<int64_t> column(outShape.size(), 1);
  column[0] = inShape[0];
  column[1] = inShape[1];
  Value planeStart = imp.createConstant(DenseElementsAttr::get(
      RankedTensorType::get(column, i64), ArrayRef<int64_t>(starts)));
  Value flat = imp.createReshape(input, {planes * plane});
  SmallVector<int64_t> outSpatial(outShape.size(), 1);
  for (int64_t d = 0; d < spatial; ++d)
    outSpatial[2 + d] = outShape[2 + d];
  Value best, bestIndex;
  for (int64_t t = 0; t < taps; ++t) {
    // The tap's offset in the window, dim by dim.
    SmallVector<int64_t> tap(spatial);
    for (int64_t d = spatial - 1, rest = t; d >= 0; --d) {
      tap[d] = rest % w.kernel[d];
      rest /= w.kernel[d];
    }
    SmallVector<int64_t> positions;
    SmallVector<bool> valid;
    for (int64_t o = 0; o < outCount; ++o) {
      int64_t position = 0, rest = o;
      bool inside = true;
      SmallVector<int64_t> coord(spatial);
      for (int64_t d = spatial - 1; d >= 0; --d) {
        coord[d] = rest % outShape[2 + d];
        rest /= outShape[2 + d];
      }
      for (int64_t d = 0; d < spatial; ++d) {
        int64_t at =
            coord[d] * w.strides[d] - w.pads[d] + tap[d] * w.dilations[d];
        inside = inside && at >= 0 && at < inShape[2 + d];
        position = position * inShape[2 + d] +
                   std::clamp<int64_t>(at, 0, inShape[2 + d] - 1);
      }
      positions.push_back(position);
      valid.push_back(inside);
    }
    Value offsets = imp.createConstant(DenseElementsAttr::get(
        RankedTensorType::get(outSpatial, i64), ArrayRef<int64_t>(positions)));
    Value mask = imp.createConstant(
        DenseElementsAttr::get(RankedTensorType::get(outSpatial, b.getI1Type()),
                               ArrayRef<bool>(valid)));
    Value where = e.add(planeStart, offsets);
    Value taken =
        where && flat
            ? imp.createInferred<GatherOp>(flat, where, b.getI64IntegerAttr(0))
            : Value();
    Value value = e.select(
        mask, taken, e.scalar(taken, -std::numeric_limits<double>::infinity()));
    if (!best) {
      best = value;
      bestIndex = where;
      continue;
    }
    Value larger = e.greater(value, best);
    best = e.select(larger, value, best);
    bestIndex = e.select(larger, where, bestIndex);
  }
  return bestIndex;
}

LogicalResult onnx_import::importMaxPool(NodeImporter &imp) {
  Value input = getWindowedInput(imp);
  if (!input)
    return failure();
  if (int64_t order = imp.getIntAttr("storage_order", 0))
    return imp.emitUnsupportedAttr("storage_order", Twine(order),
                                   "only row-major (0) is");
  std::optional<Window> w = getPoolWindow(imp, input);
  if (!w)
    return failure();
  OpBuilder &builder = imp.getBuilder();
  Value result = imp.createInferred<MaxPoolOp>(
      input, builder.getDenseI64ArrayAttr(w->kernel),
      builder.getDenseI64ArrayAttr(w->strides),
      builder.getDenseI64ArrayAttr(w->pads),
      builder.getDenseI64ArrayAttr(w->dilations),
      builder.getBoolAttr(imp.getIntAttr("ceil_mode", 0) != 0));
  if (!result)
    return failure();
  imp.setOutput(0, result);
  if (imp.isOutputUsed(1)) {
    Value indices = maxPoolIndices(imp, input, *w, getShape(result));
    if (!indices)
      return failure();
    imp.setOutput(1, indices);
  }
  return success();
}

LogicalResult onnx_import::importAveragePool(NodeImporter &imp) {
  Value input = getWindowedInput(imp);
  if (!input)
    return failure();
  SmallVector<int64_t> dilations = imp.getIntsAttr("dilations");
  if (llvm::any_of(dilations, [](int64_t d) { return d != 1; }))
    return imp.emitUnsupportedAttr("dilations", formatShape(dilations),
                                   "average pooling supports dilation 1 only");
  std::optional<Window> w = getPoolWindow(imp, input);
  if (!w)
    return failure();
  OpBuilder &builder = imp.getBuilder();
  Value result = imp.createInferred<AvgPoolOp>(
      input, builder.getDenseI64ArrayAttr(w->kernel),
      builder.getDenseI64ArrayAttr(w->strides),
      builder.getDenseI64ArrayAttr(w->pads),
      builder.getBoolAttr(imp.getIntAttr("ceil_mode", 0) != 0),
      builder.getBoolAttr(imp.getIntAttr("count_include_pad", 0) != 0));
  if (!result)
    return failure();
  imp.setOutput(0, result);
  return success();
}

/// Global pooling reduces all spatial dims, keeping them as 1s.
template <typename ReduceOpTy>
static LogicalResult importGlobalPool(NodeImporter &imp) {
  Value input = getWindowedInput(imp);
  if (!input)
    return failure();
  SmallVector<int64_t> axes;
  for (int64_t axis = 2; axis < getRank(input); ++axis)
    axes.push_back(axis);
  OpBuilder &builder = imp.getBuilder();
  Value result = imp.createInferred<ReduceOpTy>(
      input, builder.getDenseI64ArrayAttr(axes), builder.getBoolAttr(true));
  if (!result)
    return failure();
  imp.setOutput(0, result);
  return success();
}

LogicalResult onnx_import::importGlobalAveragePool(NodeImporter &imp) {
  return importGlobalPool<ReduceMeanOp>(imp);
}

LogicalResult onnx_import::importGlobalMaxPool(NodeImporter &imp) {
  return importGlobalPool<ReduceMaxOp>(imp);
}

/// |x|^p, and its inverse s^(1/p), for the Lp pools (x * x and a square
/// root for p = 2, the usual case).
static Value powerOfAbs(Expr &e, Value x, int64_t p) {
  if (p == 2)
    return e.mul(x, x);
  Value magnitude = e.abs(x);
  return p == 1
             ? magnitude
             : e.binary<PowOp>(magnitude, e.scalar(x, static_cast<double>(p)));
}
static Value rootOf(Expr &e, Value s, int64_t p) {
  if (p == 2)
    return e.unary<SqrtOp>(s);
  return p == 1 ? s : e.binary<PowOp>(s, e.scalar(s, 1.0 / p));
}

/// The p attribute of the Lp pools (default 2); positive.
static std::optional<int64_t> getLpPower(NodeImporter &imp) {
  int64_t p = imp.getIntAttr("p", 2);
  if (imp.hasError())
    return std::nullopt;
  if (p < 1) {
    (void)imp.emitUnsupportedAttr("p", Twine(p), "it must be positive");
    return std::nullopt;
  }
  return p;
}

/// LpPool: (sum over the window of |x|^p)^(1/p): an average pool of |x|^p
/// with the padding counted (zeros add nothing), times the window's size.
LogicalResult onnx_import::importLpPool(NodeImporter &imp) {
  Expr e(imp);
  Value input = getWindowedInput(imp);
  std::optional<int64_t> p = getLpPower(imp);
  if (!input || !p)
    return failure();
  std::optional<Window> w = getPoolWindow(imp, input);
  if (!w)
    return failure();
  if (llvm::any_of(w->dilations, [](int64_t d) { return d != 1; }))
    return imp.emitUnsupportedAttr("dilations", formatShape(w->dilations),
                                   "Lp pooling supports dilation 1 only");
  int64_t volume = 1;
  for (int64_t k : w->kernel)
    volume *= k;
  OpBuilder &builder = imp.getBuilder();
  Value powered = powerOfAbs(e, input, *p);
  Value mean =
      powered ? imp.createInferred<AvgPoolOp>(
                    powered, builder.getDenseI64ArrayAttr(w->kernel),
                    builder.getDenseI64ArrayAttr(w->strides),
                    builder.getDenseI64ArrayAttr(w->pads),
                    builder.getBoolAttr(imp.getIntAttr("ceil_mode", 0) != 0),
                    builder.getBoolAttr(true))
              : Value();
  return imp.setResult(
      rootOf(e, e.mulScalar(mean, static_cast<double>(volume)), *p));
}

/// GlobalLpPool: (sum over all spatial dims of |x|^p)^(1/p), spatial dims
/// kept as 1s.
LogicalResult onnx_import::importGlobalLpPool(NodeImporter &imp) {
  Expr e(imp);
  Value input = getWindowedInput(imp);
  std::optional<int64_t> p = getLpPower(imp);
  if (!input || !p)
    return failure();
  SmallVector<int64_t> axes;
  for (int64_t axis = 2; axis < getRank(input); ++axis)
    axes.push_back(axis);
  OpBuilder &builder = imp.getBuilder();
  Value powered = powerOfAbs(e, input, *p);
  Value sum = powered ? imp.createInferred<ReduceSumOp>(
                            powered, builder.getDenseI64ArrayAttr(axes),
                            builder.getBoolAttr(true))
                      : Value();
  return imp.setResult(rootOf(e, sum, *p));
}
