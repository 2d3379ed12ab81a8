//===- ImportResize.cpp - ONNX Resize as gathers and weighted sums --------===//
//
// Resize (opsets 13-21), modes nearest, linear and cubic, works one axis at
// a time (the interpolations are separable). For each output position the
// input coordinate follows coordinate_transformation_mode; nearest rounds it
// by nearest_mode and gathers that row (weft.gather); linear gathers the two
// neighbouring rows and cubic the four, and weighs them by constants fixed
// at import. Gradients come from the gathers' scatter-adds and the
// products. Antialiasing and tf_crop_and_resize are refused by name.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImportExpr.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/WeftOps.h"

#include <cmath>

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

namespace {
struct ResizeOptions {
  std::string mode, coordinates, nearest;
  double cubicA = -0.75;
  bool excludeOutside = false;
};
} // namespace

/// The input coordinate of output index `x` along an axis of `in` elements
/// resized with `scale` (out / in unless scales were given). As in ONNX, the
/// resized length is in * scale, not rounded.
static double sourceCoordinate(const ResizeOptions &o, int64_t x, int64_t in,
                               double scale) {
  double length = in * scale;
  if (o.coordinates == "align_corners")
    return length <= 1 ? 0.0 : x * (in - 1) / (length - 1);
  if (o.coordinates == "asymmetric")
    return x / scale;
  if (o.coordinates == "pytorch_half_pixel" && length <= 1)
    return 0.0;
  return (x + 0.5) / scale - 0.5; // half_pixel, pytorch_half_pixel
}

static int64_t roundNearest(const std::string &mode, double v) {
  double f = std::floor(v);
  if (mode == "floor")
    return static_cast<int64_t>(f);
  if (mode == "ceil")
    return static_cast<int64_t>(std::ceil(v));
  if (v - f == 0.5)
    return static_cast<int64_t>(mode == "round_prefer_ceil" ? f + 1 : f);
  return static_cast<int64_t>(std::round(v));
}

/// Keys' cubic convolution kernel with coefficient `a` at distance `d`.
static double cubicWeight(double d, double a) {
  d = std::fabs(d);
  if (d <= 1)
    return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2)
    return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

/// The weights of constants fixed at import, shaped to broadcast along
/// `axis` of `data`, in its element type.
static Value axisWeights(NodeImporter &imp, Value data, int64_t axis,
                         ArrayRef<float> values) {
  SmallVector<int64_t> shape(getRank(data), 1);
  shape[axis] = static_cast<int64_t>(values.size());
  auto f32 = RankedTensorType::get(shape, imp.getBuilder().getF32Type());
  Value w = imp.createConstant(DenseElementsAttr::get(f32, values));
  return w ? imp.createCast(w, getElementType(data)) : Value();
}

/// cubic: the four rows around the coordinate (floor - 1 .. floor + 2),
/// weighed by the cubic kernel. Rows outside the input repeat its edge
/// (ONNX's reference pads by the edge values), or with exclude_outside
/// weigh 0 and the others are scaled to sum to 1.
static Value resizeCubic(NodeImporter &imp, Value data, int64_t axis,
                         int64_t out, double scale, const ResizeOptions &o) {
  int64_t in = getShape(data)[axis];
  SmallVector<int64_t> rows[4];
  SmallVector<float> weights[4];
  for (int64_t x = 0; x < out; ++x) {
    double c = sourceCoordinate(o, x, in, scale);
    int64_t base = static_cast<int64_t>(std::floor(c));
    double t = c - static_cast<double>(base);
    double w[4], sum = 0;
    for (int k = 0; k < 4; ++k) {
      int64_t row = base - 1 + k;
      w[k] = cubicWeight(t + 1 - k, o.cubicA);
      if (o.excludeOutside && (row < 0 || row >= in))
        w[k] = 0;
      sum += w[k];
      rows[k].push_back(std::clamp<int64_t>(row, 0, in - 1));
    }
    for (int k = 0; k < 4; ++k)
      weights[k].push_back(
          static_cast<float>(o.excludeOutside && sum != 0 ? w[k] / sum : w[k]));
  }
  Value result;
  for (int k = 0; k < 4; ++k) {
    Value tap = Expr(imp).gatherAt(data, axis, rows[k]);
    Value w = axisWeights(imp, data, axis, weights[k]);
    if (!tap || !w)
      return {};
    Value term = imp.createInferred<MulOp>(tap, w);
    result = result ? imp.createInferred<AddOp>(result, term) : term;
    if (!result)
      return {};
  }
  return result;
}

/// `data` resized along `axis` to `out` elements.
static Value resizeAxis(NodeImporter &imp, Value data, int64_t axis,
                        int64_t out, double scale, const ResizeOptions &o) {
  int64_t in = getShape(data)[axis];
  if (o.mode == "nearest") {
    SmallVector<int64_t> rows;
    for (int64_t x = 0; x < out; ++x)
      rows.push_back(std::clamp<int64_t>(
          roundNearest(o.nearest, sourceCoordinate(o, x, in, scale)), 0,
          in - 1));
    return Expr(imp).gatherAt(data, axis, rows);
  }
  if (o.mode == "cubic")
    return resizeCubic(imp, data, axis, out, scale, o);
  // linear: y = x[i0] * (1 - t) + x[i1] * t, the coordinate clamped to the
  // input's range.
  SmallVector<int64_t> lower, upper;
  SmallVector<float> weightLower, weightUpper;
  for (int64_t x = 0; x < out; ++x) {
    double c = std::clamp(sourceCoordinate(o, x, in, scale), 0.0,
                          static_cast<double>(in - 1));
    int64_t i0 = static_cast<int64_t>(std::floor(c));
    int64_t i1 = std::min(i0 + 1, in - 1);
    float t = static_cast<float>(c - i0);
    lower.push_back(i0);
    upper.push_back(i1);
    weightLower.push_back(1.0f - t);
    weightUpper.push_back(t);
  }
  Value a = Expr(imp).gatherAt(data, axis, lower);
  Value b = Expr(imp).gatherAt(data, axis, upper);
  Value wa = axisWeights(imp, data, axis, weightLower);
  Value wb = axisWeights(imp, data, axis, weightUpper);
  if (!a || !b || !wa || !wb)
    return {};
  Value sa = imp.createInferred<MulOp>(a, wa);
  Value sb = imp.createInferred<MulOp>(b, wb);
  return sa && sb ? imp.createInferred<AddOp>(sa, sb) : Value();
}

LogicalResult onnx_import::importResize(NodeImporter &imp) {
  Value data = imp.getInput(0, "X");
  if (!data)
    return failure();
  if (!isa<FloatType>(getElementType(data)))
    return imp.emitError("input 'X' has element type " +
                         formatType(getElementType(data)) +
                         "; weft resizes float tensors");
  int64_t rank = getRank(data);
  ResizeOptions o;
  o.mode = imp.getStringAttr("mode", "nearest");
  o.coordinates =
      imp.getStringAttr("coordinate_transformation_mode", "half_pixel");
  o.nearest = imp.getStringAttr("nearest_mode", "round_prefer_floor");
  o.cubicA = imp.getFloatAttr("cubic_coeff_a", -0.75);
  o.excludeOutside = imp.getIntAttr("exclude_outside", 0) != 0;
  if (o.mode != "nearest" && o.mode != "linear" && o.mode != "cubic")
    return imp.emitUnsupportedAttr("mode", "'" + o.mode + "'",
                                   "ONNX defines nearest, linear and cubic");
  if (o.coordinates != "half_pixel" && o.coordinates != "pytorch_half_pixel" &&
      o.coordinates != "align_corners" && o.coordinates != "asymmetric")
    return imp.emitUnsupportedAttr(
        "coordinate_transformation_mode", "'" + o.coordinates + "'",
        "weft knows half_pixel, pytorch_half_pixel, align_corners and "
        "asymmetric");
  if (o.nearest != "round_prefer_floor" && o.nearest != "round_prefer_ceil" &&
      o.nearest != "floor" && o.nearest != "ceil")
    return imp.emitUnsupportedAttr("nearest_mode", "'" + o.nearest + "'",
                                   "ONNX defines round_prefer_floor, "
                                   "round_prefer_ceil, floor and ceil");
  if (imp.getIntAttr("antialias", 0) != 0 && o.mode != "nearest")
    return imp.emitUnsupportedAttr("antialias", "1", "weft does not antialias");
  std::string policy = imp.getStringAttr("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch")
    return imp.emitUnsupportedAttr("keep_aspect_ratio_policy",
                                   "'" + policy + "'",
                                   "weft resizes to the sizes given");

  // Opset 18's axes: which dimensions scales / sizes cover.
  SmallVector<int64_t> axes;
  for (int64_t a : imp.getIntsAttr("axes")) {
    if (a < -rank || a >= rank)
      return imp.emitError("axis " + Twine(a) + " is out of range for " +
                           formatType(data.getType()));
    axes.push_back(a < 0 ? a + rank : a);
  }
  if (axes.empty())
    for (int64_t a = 0; a < rank; ++a)
      axes.push_back(a);

  SmallVector<int64_t> outShape(getShape(data));
  SmallVector<double> scales(rank, 0.0);
  bool hasScales = imp.hasInput(2), hasSizes = imp.hasInput(3);
  if (hasScales) {
    std::optional<DenseElementsAttr> given = imp.getConstantInput(2, "scales");
    if (!given)
      return failure();
    hasScales = given->getNumElements() > 0;
    if (hasScales) {
      if (given->getNumElements() != static_cast<int64_t>(axes.size()))
        return imp.emitError("input 'scales' has " +
                             Twine(given->getNumElements()) + " values for " +
                             Twine(axes.size()) + " axes");
      for (auto [axis, v] : llvm::zip(axes, given->getValues<APFloat>())) {
        double scale = v.convertToDouble();
        if (!(scale > 0))
          return imp.emitError("scale " + std::to_string(scale) + " of axis " +
                               Twine(axis) + " must be positive");
        scales[axis] = scale;
        outShape[axis] =
            static_cast<int64_t>(std::floor(getShape(data)[axis] * scale));
      }
    }
  }
  if (hasSizes) {
    if (hasScales)
      return imp.emitError("inputs 'scales' and 'sizes' are both given");
    std::optional<SmallVector<int64_t>> sizes = imp.getConstantInts(3, "sizes");
    if (!sizes)
      return failure();
    if (sizes->size() != axes.size())
      return imp.emitError("input 'sizes' has " + Twine(sizes->size()) +
                           " values for " + Twine(axes.size()) + " axes");
    for (auto [axis, size] : llvm::zip(axes, *sizes))
      outShape[axis] = size;
  } else if (!hasScales) {
    return imp.emitError("needs input 'scales' or 'sizes'");
  }

  Value result = data;
  for (int64_t axis : axes) {
    int64_t in = getShape(data)[axis], out = outShape[axis];
    if (out < 1)
      return imp.emitError("axis " + Twine(axis) + " would have " + Twine(out) +
                           " elements");
    double scale =
        scales[axis] > 0 ? scales[axis] : static_cast<double>(out) / in;
    if (out == in && scale == 1.0)
      continue;
    result = resizeAxis(imp, result, axis, out, scale, o);
    if (!result)
      return failure();
  }
  imp.setOutput(0, result);
  return success();
}
