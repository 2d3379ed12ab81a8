//===- ImportImage.cpp - Image ops built from weft's own ops --------------===//
//
// CenterCropPad (slices and constant pads), AffineGrid (a product with the
// base grid), Col2Im (one weft.gather of the columns at positions fixed at
// import, summed over the block), RoiAlign (bilinear taps gathered at
// positions computed from the rois, as GridSample's) and MaxRoiPool (masked
// maxima). Being made of weft ops, they get their gradients, shardings and
// GPU kernels from those ops.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImportExpr.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/WeftOps.h"

#include <cfloat>

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

namespace {

Value floatConstant(NodeImporter &imp, Type type, ArrayRef<int64_t> shape,
                    ArrayRef<double> values) {
  SmallVector<Attribute> attrs;
  for (double v : values)
    attrs.push_back(FloatAttr::get(type, v));
  return imp.createConstant(
      DenseElementsAttr::get(RankedTensorType::get(shape, type), attrs));
}

Value intConstant(NodeImporter &imp, ArrayRef<int64_t> shape,
                  ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get(shape, imp.getBuilder().getI64Type());
  return imp.createConstant(DenseElementsAttr::get(type, values));
}

int64_t product(ArrayRef<int64_t> values) {
  int64_t p = 1;
  for (int64_t v : values)
    p *= v;
  return p;
}

/// Column `k` of a [R, cols] tensor as [R, 1, 1, 1].
Value roiColumn(NodeImporter &imp, Value rois, int64_t k) {
  Value column = Expr(imp).gatherAt(rois, 1, {k});
  return column ? imp.createReshape(column, {getShape(rois)[0], 1, 1, 1})
                : Value();
}

/// Checks a RoiAlign or MaxRoiPool's X (float [N, C, H, W]) and rois
/// ([num_rois, columns] of X's type, `layout` naming the columns); the roi
/// count into `r`. False after the error.
bool checkRoiInputs(NodeImporter &imp, Value x, Value rois, int64_t columns,
                    StringRef layout, int64_t &r) {
  if (getShape(x).size() != 4 || !isa<FloatType>(getElementType(x))) {
    (void)imp.emitError("input X (" + formatType(x.getType()) +
                        ") should be a float [N, C, H, W]");
    return false;
  }
  r = getShape(rois).empty() ? 0 : getShape(rois)[0];
  if (getShape(rois) != ArrayRef<int64_t>{r, columns} ||
      getElementType(rois) != getElementType(x)) {
    (void)imp.emitError("input 'rois' (" + formatType(rois.getType()) +
                        ") should be [num_rois, " + Twine(columns) + "] " +
                        layout + "of X's element type");
    return false;
  }
  return true;
}

/// Reads an ints attribute of `count` values (`fill` each when absent).
std::optional<SmallVector<int64_t>> intsOf(NodeImporter &imp, StringRef name,
                                           size_t count, int64_t fill,
                                           int64_t min) {
  SmallVector<int64_t> values = imp.getIntsAttr(name);
  if (!imp.hasAttr(name))
    values.assign(count, fill);
  if (imp.hasError())
    return std::nullopt;
  if (values.size() != count ||
      llvm::any_of(values, [&](int64_t v) { return v < min; })) {
    std::string list;
    for (int64_t v : values)
      list += (list.empty() ? "" : ", ") + std::to_string(v);
    (void)imp.emitError("attribute '" + name + "' [" + list + "] should hold " +
                        Twine(count) + " values of at least " + Twine(min));
    return std::nullopt;
  }
  return values;
}

} // namespace

//===----------------------------------------------------------------------===//
// CenterCropPad
//===----------------------------------------------------------------------===//

LogicalResult onnx_import::importCenterCropPad(NodeImporter &imp) {
  Value x = imp.getInput(0, "input_data");
  if (!x)
    return failure();
  std::optional<SmallVector<int64_t>> sizes = imp.getConstantInts(1, "shape");
  if (!sizes)
    return failure();
  const int64_t rank = getRank(x);
  SmallVector<int64_t> axes = imp.getIntsAttr("axes");
  if (!imp.hasAttr("axes"))
    for (int64_t a = 0; a < rank; ++a)
      axes.push_back(a);
  if (imp.hasError())
    return failure();
  if (axes.size() != sizes->size())
    return imp.emitError("input 'shape' holds " + Twine(sizes->size()) +
                         " sizes for " + Twine(axes.size()) + " axes");
  SmallVector<bool> seen(rank, false);
  for (int64_t &a : axes) {
    if (a < -rank || a >= rank)
      return imp.emitError("axis " + Twine(a) + " is out of range for " +
                           formatType(x.getType()));
    a = a < 0 ? a + rank : a;
    if (seen[a])
      return imp.emitError("axis " + Twine(a) + " is given twice");
    seen[a] = true;
  }
  Value zero = imp.createScalar(getElementType(x), 0.0);
  Value result = x;
  for (auto [a, size] : llvm::zip(axes, *sizes)) {
    if (size < 1)
      return imp.emitError("size " + Twine(size) + " for axis " + Twine(a) +
                           " is not supported: weft needs every dimension "
                           "to be at least 1");
    const int64_t dim = getShape(result)[a];
    // The extra (odd) element goes after: ONNX's reference crops and pads
    // (size - dim) / 2 rounded down before.
    if (size < dim)
      result = cropAxis(imp, result, a, (dim - size) / 2,
                        dim - size - (dim - size) / 2);
    else if (size > dim)
      result = padAxisConstant(imp, result, a, (size - dim) / 2,
                               size - dim - (size - dim) / 2, zero);
    if (!result)
      return failure();
  }
  return imp.setResult(result);
}

//===----------------------------------------------------------------------===//
// AffineGrid
//===----------------------------------------------------------------------===//

LogicalResult onnx_import::importAffineGrid(NodeImporter &imp) {
  Value theta = imp.getInput(0, "theta");
  if (!theta)
    return failure();
  std::optional<SmallVector<int64_t>> size = imp.getConstantInts(1, "size");
  if (!size)
    return failure();
  const bool align = imp.getIntAttr("align_corners", 0) != 0;
  if (imp.hasError())
    return failure();
  if (size->size() != 4 && size->size() != 5)
    return imp.emitError("input 'size' should be (N, C, H, W) or (N, C, D, "
                         "H, W), got " +
                         Twine(size->size()) + " values");
  const int64_t dims = static_cast<int64_t>(size->size()) - 2;
  const int64_t n = (*size)[0];
  ArrayRef<int64_t> ts = getShape(theta);
  if (!isa<FloatType>(getElementType(theta)) || ts.size() != 3 || ts[0] != n ||
      ts[1] != dims || ts[2] != dims + 1)
    return imp.emitError("input 'theta' (" + formatType(theta.getType()) +
                         ") should be a float [" + Twine(n) + ", " +
                         Twine(dims) + ", " + Twine(dims + 1) +
                         "] for a size of " + Twine(size->size()) + " values");
  for (int64_t d : ArrayRef(*size).drop_front(2))
    if (d < 1)
      return imp.emitError("input 'size' has a spatial size " + Twine(d) +
                           "; weft needs every dimension to be at least 1");
  // The base grid: one row (x, y[, z], 1) per output position, the last
  // spatial axis (x) varying fastest. Coordinates as numpy's linspace(-1,
  // 1, L), scaled by (L - 1) / L without align_corners.
  auto coordinate = [&](int64_t i, int64_t length) {
    double at = length == 1 ? -1.0 : -1.0 + 2.0 * i / (length - 1);
    return align ? at : at * (length - 1) / length;
  };
  ArrayRef<int64_t> spatial = ArrayRef(*size).drop_front(2);
  const int64_t positions = product(spatial);
  SmallVector<double> base;
  base.reserve(positions * (dims + 1));
  SmallVector<int64_t> index(dims, 0);
  for (int64_t p = 0; p < positions; ++p) {
    for (int64_t k = dims - 1; k >= 0; --k) // x first: the last axis
      base.push_back(coordinate(index[k], spatial[k]));
    base.push_back(1.0);
    for (int64_t k = dims - 1; k >= 0; --k) {
      if (++index[k] < spatial[k])
        break;
      index[k] = 0;
    }
  }
  Value baseGrid =
      floatConstant(imp, getElementType(theta), {1, positions, dims + 1}, base);
  if (!baseGrid)
    return failure();
  OpBuilder &b = imp.getBuilder();
  Value grid = imp.create<MatMulOp>(
      RankedTensorType::get({n, positions, dims}, getElementType(theta)),
      baseGrid, theta, b.getBoolAttr(false), b.getBoolAttr(true));
  SmallVector<int64_t> shape = {n};
  shape.append(spatial.begin(), spatial.end());
  shape.push_back(dims);
  return imp.setResult(grid ? imp.createReshape(grid, shape) : Value());
}

//===----------------------------------------------------------------------===//
// Col2Im
//===----------------------------------------------------------------------===//

LogicalResult onnx_import::importCol2Im(NodeImporter &imp) {
  Value input = imp.getInput(0, "input");
  if (!input)
    return failure();
  std::optional<SmallVector<int64_t>> image =
      imp.getConstantInts(1, "image_shape");
  if (!image)
    return failure();
  std::optional<SmallVector<int64_t>> block =
      imp.getConstantInts(2, "block_shape");
  if (!block)
    return failure();
  const size_t dims = image->size();
  if (dims == 0 || block->size() != dims)
    return imp.emitError("inputs 'image_shape' and 'block_shape' should "
                         "hold one size per spatial dimension, got " +
                         Twine(image->size()) + " and " + Twine(block->size()));
  std::optional<SmallVector<int64_t>> dilations =
      intsOf(imp, "dilations", dims, 1, 1);
  std::optional<SmallVector<int64_t>> strides =
      intsOf(imp, "strides", dims, 1, 1);
  std::optional<SmallVector<int64_t>> pads =
      intsOf(imp, "pads", 2 * dims, 0, 0);
  if (!dilations || !strides || !pads)
    return failure();
  ArrayRef<int64_t> shape = getShape(input);
  const int64_t blockSize = product(*block);
  if (shape.size() != 3 || blockSize < 1 || shape[1] % blockSize != 0)
    return imp.emitError("input (" + formatType(input.getType()) +
                         ") should be [N, C x " + Twine(blockSize) +
                         " (the block's size), L]");
  SmallVector<int64_t> counts;
  for (size_t d = 0; d < dims; ++d) {
    int64_t span = (*dilations)[d] * ((*block)[d] - 1) + 1;
    int64_t room = (*image)[d] + (*pads)[d] + (*pads)[d + dims] - span;
    if ((*image)[d] < 1 || (*block)[d] < 1 || room < 0)
      return imp.emitError(
          "a block of " + Twine((*block)[d]) + " (dilation " +
          Twine((*dilations)[d]) + ") does not fit spatial dimension " +
          Twine(d) + " of the image (" + Twine((*image)[d]) + " with pads)");
    counts.push_back(room / (*strides)[d] + 1);
  }
  const int64_t blocks = product(counts);
  if (shape[2] != blocks)
    return imp.emitError("input (" + formatType(input.getType()) +
                         ") should have " + Twine(blocks) +
                         " columns (L), one per position of the block");
  const int64_t n = shape[0], channels = shape[1] / blockSize;
  const int64_t pixels = product(*image);
  // index[k][p]: where pixel p's term of block element k lies in the
  // columns padded with a zero column, [C, K * (L + 1)] per sample: k * (L
  // + 1) + l for the block position l that puts element k on p, k * (L +
  // 1) + L (zero) when none does.
  SmallVector<int64_t> index(blockSize * pixels, 0);
  for (int64_t k = 0; k < blockSize; ++k)
    for (int64_t p = 0; p < pixels; ++p)
      index[k * pixels + p] = k * (blocks + 1) + blocks;
  SmallVector<int64_t> kk(dims, 0);
  for (int64_t k = 0; k < blockSize; ++k) {
    SmallVector<int64_t> ll(dims, 0);
    for (int64_t l = 0; l < blocks; ++l) {
      int64_t pixel = 0;
      bool inside = true;
      for (size_t d = 0; d < dims && inside; ++d) {
        int64_t at =
            ll[d] * (*strides)[d] + kk[d] * (*dilations)[d] - (*pads)[d];
        inside = at >= 0 && at < (*image)[d];
        pixel = pixel * (*image)[d] + at;
      }
      if (inside)
        index[k * pixels + pixel] = k * (blocks + 1) + l;
      for (int64_t d = dims - 1; d >= 0; --d) {
        if (++ll[d] < counts[d])
          break;
        ll[d] = 0;
      }
    }
    for (int64_t d = dims - 1; d >= 0; --d) {
      if (++kk[d] < (*block)[d])
        break;
      kk[d] = 0;
    }
  }
  Value columns = imp.createReshape(input, {n, channels, blockSize, blocks});
  Value zero = imp.createScalar(getElementType(input), 0.0);
  if (!columns || !zero)
    return failure();
  Value padded = padAxisConstant(imp, columns, 3, 0, 1, zero);
  Value flat =
      padded
          ? imp.createReshape(padded, {n, channels, blockSize * (blocks + 1)})
          : Value();
  Value positions = intConstant(imp, {blockSize, pixels}, index);
  if (!flat || !positions)
    return failure();
  OpBuilder &b = imp.getBuilder();
  Value terms =
      imp.createInferred<GatherOp>(flat, positions, b.getI64IntegerAttr(2));
  Value sum =
      terms ? imp.createInferred<ReduceSumOp>(
                  terms, b.getDenseI64ArrayAttr({2}), b.getBoolAttr(false))
            : Value();
  SmallVector<int64_t> result = {n, channels};
  result.append(image->begin(), image->end());
  return imp.setResult(sum ? imp.createReshape(sum, result) : Value());
}

//===----------------------------------------------------------------------===//
// RoiAlign
//===----------------------------------------------------------------------===//

LogicalResult onnx_import::importRoiAlign(NodeImporter &imp) {
  Expr e(imp);
  Value x = imp.getInput(0, "X");
  Value rois = imp.getInput(1, "rois");
  Value batch = imp.getInput(2, "batch_indices");
  if (!x || !rois || !batch)
    return failure();
  int64_t r = 0;
  if (!checkRoiInputs(imp, x, rois, 4, "", r))
    return failure();
  ArrayRef<int64_t> xs = getShape(x);
  Type type = getElementType(x);
  if (getShape(batch) != ArrayRef<int64_t>{r} ||
      !getElementType(batch).isSignlessInteger())
    return imp.emitError("input 'batch_indices' (" +
                         formatType(batch.getType()) +
                         ") should be integers [" + Twine(r) + "]");
  // Opsets before 16 had no coordinate_transformation_mode and worked as
  // output_half_pixel does; 16 made half_pixel the default.
  std::string coordinates = imp.getStringAttr(
      "coordinate_transformation_mode",
      imp.getOpset() >= 16 ? "half_pixel" : "output_half_pixel");
  std::string mode = imp.getStringAttr("mode", "avg");
  const int64_t oh = imp.getIntAttr("output_height", 1);
  const int64_t ow = imp.getIntAttr("output_width", 1);
  const int64_t ratio = imp.getIntAttr("sampling_ratio", 0);
  const double scale = imp.getFloatAttr("spatial_scale", 1.0);
  if (imp.hasError())
    return failure();
  if (coordinates != "half_pixel" && coordinates != "output_half_pixel")
    return imp.emitUnsupportedAttr("coordinate_transformation_mode",
                                   "'" + coordinates + "'",
                                   "expected half_pixel or output_half_pixel");
  if (mode != "avg" && mode != "max")
    return imp.emitUnsupportedAttr("mode", "'" + mode + "'",
                                   "expected avg or max");
  if (oh < 1 || ow < 1)
    return imp.emitError("output_height and output_width should be at least "
                         "1, got " +
                         Twine(oh) + " and " + Twine(ow));
  if (ratio < 1)
    return imp.emitUnsupportedAttr(
        "sampling_ratio", Twine(ratio).str(),
        "0 (adaptive) takes as many samples per bin as each roi's size "
        "asks, known only when the model runs, and weft compiles a static "
        "graph; export with a sampling_ratio above 0 (torchvision's "
        "MultiScaleRoIAlign uses 2)");
  const bool half = coordinates == "half_pixel";
  const int64_t c = xs[1], h = xs[2], w = xs[3];
  const int64_t sh = oh * ratio, sw = ow * ratio;

  // Each roi's corner and bin size, [R, 1, 1, 1].
  const double offset = half ? 0.5 : 0.0;
  auto corner = [&](int64_t k) {
    return e.addScalar(e.mulScalar(roiColumn(imp, rois, k), scale), -offset);
  };
  Value startW = corner(0), startH = corner(1);
  Value extentW = e.sub(corner(2), startW), extentH = e.sub(corner(3), startH);
  if (!half) { // legacy: at least one pixel
    extentW = e.binary<MaxOp>(extentW, e.scalar(extentW, 1.0));
    extentH = e.binary<MaxOp>(extentH, e.scalar(extentH, 1.0));
  }
  Value binW = e.div(extentW, e.scalar(extentW, static_cast<double>(ow)));
  Value binH = e.div(extentH, e.scalar(extentH, static_cast<double>(oh)));
  // Sample s of an axis lies (s / ratio) + (s % ratio + 0.5) / ratio bins
  // from the roi's start.
  auto fractions = [&](int64_t bins, ArrayRef<int64_t> shape) {
    SmallVector<double> at;
    for (int64_t bin = 0; bin < bins; ++bin)
      for (int64_t i = 0; i < ratio; ++i)
        at.push_back(bin + (i + 0.5) / ratio);
    return floatConstant(imp, type, shape, at);
  };
  Value y = e.add(startH, e.mul(binH, fractions(oh, {1, 1, sh, 1})));
  Value xw = e.add(startW, e.mul(binW, fractions(ow, {1, 1, 1, sw})));

  // Bilinear taps as onnxruntime's RoiAlign takes them: a sample beyond
  // [-1, size] on either axis counts as 0; others are moved to at least 0,
  // and at the last row or column both taps are that one.
  auto outside = [&](Value v, int64_t size) {
    return e.binary<OrOp>(e.less(v, e.scalar(v, -1.0)),
                          e.greater(v, e.scalar(v, static_cast<double>(size))));
  };
  Value valid = e.unary<NotOp>(e.binary<OrOp>(outside(y, h), outside(xw, w)));
  struct Taps {
    Value low, high, lowWeight, highWeight;
  };
  auto taps = [&](Value v, int64_t size) {
    v = e.binary<MaxOp>(v, e.scalar(v, 0.0));
    Value low = e.unary<FloorOp>(v);
    Value edge = e.binary<GreaterEqualOp>(low, e.scalar(low, size - 1.0));
    Value last = e.scalar(low, size - 1.0);
    Value high = e.select(edge, last, e.addScalar(low, 1.0));
    low = e.select(edge, last, low);
    v = e.select(edge, low, v);
    Value highWeight = e.sub(v, low);
    return Taps{low, high, e.sub(e.scalar(v, 1.0), highWeight), highWeight};
  };
  Taps ty = taps(y, h), tx = taps(xw, w);

  // X flattened; a tap of roi r, channel ch at (yi, xi) lies at
  // batch[r] C H W + ch H W + yi W + xi.
  Type i64 = imp.getBuilder().getI64Type();
  Value flat = imp.createReshape(x, {xs[0] * c * h * w});
  Value batch64 =
      getElementType(batch) == i64 ? batch : imp.createCast(batch, i64);
  Value roiStart = e.mul(imp.createReshape(batch64, {r, 1, 1, 1}),
                         e.scalar(batch64, static_cast<double>(c * h * w)));
  SmallVector<int64_t> planes;
  for (int64_t ch = 0; ch < c; ++ch)
    planes.push_back(ch * h * w);
  Value planeStart = e.add(roiStart, intConstant(imp, {1, c, 1, 1}, planes));
  OpBuilder &b = imp.getBuilder();
  auto at = [&](Value yi, Value xi) {
    Value rowStart = e.mul(imp.createCast(yi, i64),
                           e.scalar(planeStart, static_cast<double>(w)));
    Value positions =
        e.add(planeStart, e.add(rowStart, imp.createCast(xi, i64)));
    return positions && flat ? imp.createInferred<GatherOp>(
                                   flat, positions, b.getI64IntegerAttr(0))
                             : Value();
  };
  Value zero = e.scalar(y, 0.0);
  auto weight = [&](Value wy, Value wx) {
    return e.select(valid, e.mul(wy, wx), zero);
  };
  Value terms[4] = {
      e.mul(weight(ty.lowWeight, tx.lowWeight), at(ty.low, tx.low)),
      e.mul(weight(ty.lowWeight, tx.highWeight), at(ty.low, tx.high)),
      e.mul(weight(ty.highWeight, tx.lowWeight), at(ty.high, tx.low)),
      e.mul(weight(ty.highWeight, tx.highWeight), at(ty.high, tx.high))};
  // avg: the mean of the samples' interpolations; max (as onnxruntime and
  // ONNX's reference): the largest weighted tap of any sample.
  const bool average = mode == "avg";
  Value samples =
      average ? e.add(e.add(terms[0], terms[1]), e.add(terms[2], terms[3]))
              : e.binary<MaxOp>(e.binary<MaxOp>(terms[0], terms[1]),
                                e.binary<MaxOp>(terms[2], terms[3]));
  Value grouped = samples
                      ? imp.createReshape(samples, {r, c, oh, ratio, ow, ratio})
                      : Value();
  if (!grouped)
    return failure();
  Value pooled =
      average ? e.mulScalar(imp.createInferred<ReduceSumOp>(
                                grouped, b.getDenseI64ArrayAttr({3, 5}),
                                b.getBoolAttr(false)),
                            1.0 / static_cast<double>(ratio * ratio))
              : imp.createInferred<ReduceMaxOp>(grouped,
                                                b.getDenseI64ArrayAttr({3, 5}),
                                                b.getBoolAttr(false));
  return imp.setResult(pooled);
}

//===----------------------------------------------------------------------===//
// MaxRoiPool
//===----------------------------------------------------------------------===//

LogicalResult onnx_import::importMaxRoiPool(NodeImporter &imp) {
  Expr e(imp);
  Value x = imp.getInput(0, "X");
  Value rois = imp.getInput(1, "rois");
  if (!x || !rois)
    return failure();
  int64_t r = 0;
  if (!checkRoiInputs(imp, x, rois, 5, "(batch index, x1, y1, x2, y2) ", r))
    return failure();
  ArrayRef<int64_t> xs = getShape(x);
  Type type = getElementType(x);
  if (!imp.hasAttr("pooled_shape"))
    return imp.emitError("attribute 'pooled_shape' is required");
  std::optional<SmallVector<int64_t>> pooled =
      intsOf(imp, "pooled_shape", 2, 1, 1);
  const double scale = imp.getFloatAttr("spatial_scale", 1.0);
  if (!pooled || imp.hasError())
    return failure();
  const int64_t c = xs[1], h = xs[2], w = xs[3];
  const int64_t ph = (*pooled)[0], pw = (*pooled)[1];

  // Corners rounded half away from zero, as Caffe's and onnxruntime's
  // std::round.
  auto rounded = [&](Value v) {
    Value up = e.unary<FloorOp>(e.addScalar(v, 0.5));
    Value down =
        e.unary<NegOp>(e.unary<FloorOp>(e.addScalar(e.unary<NegOp>(v), 0.5)));
    return e.select(e.less(v, e.scalar(v, 0.0)), down, up);
  };
  auto corner = [&](int64_t k) {
    return rounded(e.mulScalar(roiColumn(imp, rois, k), scale));
  };
  Value startW = corner(1), startH = corner(2);
  Value one = e.scalar(startW, 1.0);
  Value extentW =
      e.binary<MaxOp>(e.addScalar(e.sub(corner(3), startW), 1.0), one);
  Value extentH =
      e.binary<MaxOp>(e.addScalar(e.sub(corner(4), startH), 1.0), one);
  // Bin b of an axis covers [floor(b * bin), ceil((b + 1) * bin)) past the
  // roi's start, within [0, size): `bounds` is [R, 1, bins, 1].
  auto bounds = [&](Value start, Value extent, int64_t bins, int64_t size) {
    SmallVector<double> index;
    for (int64_t i = 0; i < bins; ++i)
      index.push_back(static_cast<double>(i));
    Value at = floatConstant(imp, type, {1, 1, bins, 1}, index);
    Value bin = e.div(extent, e.scalar(extent, static_cast<double>(bins)));
    Value lo = e.add(e.unary<FloorOp>(e.mul(at, bin)), start);
    Value hi = e.add(e.unary<CeilOp>(e.mul(e.addScalar(at, 1.0), bin)), start);
    Value zero = e.scalar(at, 0.0),
          top = e.scalar(at, static_cast<double>(size));
    return std::make_pair(e.clip(lo, zero, top), e.clip(hi, zero, top));
  };
  auto [hStart, hEnd] = bounds(startH, extentH, ph, h);
  auto [wStart, wEnd] = bounds(startW, extentW, pw, w);

  // The rois' images, [R, C, H, W] (batch indices truncated, as the
  // reference's int cast).
  Type i64 = imp.getBuilder().getI64Type();
  Value batchIndex =
      imp.createCast(imp.createReshape(e.gatherAt(rois, 1, {0}), {r}), i64);
  OpBuilder &b = imp.getBuilder();
  Value images =
      batchIndex
          ? imp.createInferred<GatherOp>(x, batchIndex, b.getI64IntegerAttr(0))
          : Value();
  // Masked maxima, columns first: [R, C, H, 1, W] against each column
  // bin's [R, 1, 1, PW, W] mask, then rows: [R, C, 1, H, PW] against
  // [R, 1, PH, H, 1].
  auto positions = [&](int64_t size, ArrayRef<int64_t> shape) {
    SmallVector<double> index;
    for (int64_t i = 0; i < size; ++i)
      index.push_back(static_cast<double>(i));
    return floatConstant(imp, type, shape, index);
  };
  Value lowest = e.scalar(startW, -static_cast<double>(FLT_MAX));
  auto within = [&](Value at, Value lo, Value hi) {
    return e.binary<AndOp>(e.binary<GreaterEqualOp>(at, lo), e.less(at, hi));
  };
  Value columnMask = within(positions(w, {1, 1, 1, 1, w}),
                            imp.createReshape(wStart, {r, 1, 1, pw, 1}),
                            imp.createReshape(wEnd, {r, 1, 1, pw, 1}));
  Value wide = images ? imp.createReshape(images, {r, c, h, 1, w}) : Value();
  Value byColumn = e.select(columnMask, wide, lowest);
  Value columnMax = byColumn ? imp.createInferred<ReduceMaxOp>(
                                   byColumn, b.getDenseI64ArrayAttr({4}),
                                   b.getBoolAttr(false))
                             : Value(); // [R, C, H, PW]
  Value rowMask = within(positions(h, {1, 1, 1, h, 1}),
                         imp.createReshape(hStart, {r, 1, ph, 1, 1}),
                         imp.createReshape(hEnd, {r, 1, ph, 1, 1}));
  Value tall =
      columnMax ? imp.createReshape(columnMax, {r, c, 1, h, pw}) : Value();
  Value byRow = e.select(rowMask, tall, lowest);
  Value maxima =
      byRow
          ? imp.createInferred<ReduceMaxOp>(byRow, b.getDenseI64ArrayAttr({3}),
                                            b.getBoolAttr(false))
          : Value(); // [R, C, PH, PW]
  // An empty bin (clipped away) is 0.
  Value empty = e.binary<OrOp>(
      e.binary<LessEqualOp>(imp.createReshape(hEnd, {r, 1, ph, 1}),
                            imp.createReshape(hStart, {r, 1, ph, 1})),
      e.binary<LessEqualOp>(imp.createReshape(wEnd, {r, 1, 1, pw}),
                            imp.createReshape(wStart, {r, 1, 1, pw})));
  return imp.setResult(e.select(empty, e.scalar(startW, 0.0), maxima));
}
