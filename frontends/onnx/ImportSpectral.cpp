//===- ImportSpectral.cpp - DFT and STFT as products with constants -------===//
//
// ONNX's DFT and STFT (spectrogram front ends of speech models) on real or
// complex signals ([..., 1] or [..., 2]): the transform along one axis is a
// product with constant cosine and sine matrices built at import, so the
// GEMM kernels run it and autodiff differentiates it. X_k = sum_n x_n
// e^(-2 pi i k n / L) (inverse: e^(+...) / L) over the first min(N, L)
// samples (dft_length L pads with zeros or truncates); onesided keeps
// k = 0 .. L / 2.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImportExpr.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/ShapeRules.h"
#include "dialects/weft/WeftOps.h"

#include <cmath>

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

namespace {

/// The DFT of complex (or real: `im` null) rows [M, N] with length L: the
/// real and imaginary parts [M, K].
struct RowDft {
  NodeImporter &imp;
  int64_t length;
  bool inverse, onesided;

  std::pair<Value, Value> apply(Value re, Value im) {
    Expr e(imp);
    int64_t n = std::min<int64_t>(getShape(re)[1], length);
    if (getShape(re)[1] > n) {
      re = firstColumns(re, n);
      im = im ? firstColumns(im, n) : Value();
    }
    int64_t k = onesided ? length / 2 + 1 : length;
    Type type = getElementType(re);
    // Forward: re' = re C + im S, im' = im C - re S; inverse: re' = (re C -
    // im S) / L, im' = (re S + im C) / L.
    double scale = inverse ? 1.0 / length : 1.0;
    double sign = inverse ? 1.0 : -1.0;
    Value c = matrix(type, n, k, scale, [](double a) { return std::cos(a); });
    Value s =
        matrix(type, n, k, sign * scale, [](double a) { return std::sin(a); });
    Value negS =
        matrix(type, n, k, -sign * scale, [](double a) { return std::sin(a); });
    Value outRe = product(re, c);
    Value outIm = product(re, s);
    if (im) {
      outRe = e.add(outRe, product(im, negS));
      outIm = e.add(outIm, product(im, c));
    }
    return {outRe, outIm};
  }

private:
  Value firstColumns(Value x, int64_t n) {
    OpBuilder &b = imp.getBuilder();
    auto type = getTensorType(x);
    return imp.create<SliceOp>(type.clone({type.getDimSize(0), n}), x,
                               b.getDenseI64ArrayAttr({0, 0}),
                               b.getDenseI64ArrayAttr({1, 1}));
  }
  template <typename Fn>
  Value matrix(Type type, int64_t n, int64_t k, double scale, Fn fn) {
    SmallVector<Attribute> values;
    for (int64_t row = 0; row < n; ++row)
      for (int64_t col = 0; col < k; ++col) {
        // (row * col) mod L keeps the angle small, so large transforms stay
        // accurate.
        double angle = 2.0 * M_PI * ((row * col) % length) / length;
        values.push_back(FloatAttr::get(type, scale * fn(angle)));
      }
    return imp.createConstant(
        DenseElementsAttr::get(RankedTensorType::get({n, k}, type), values));
  }
  Value product(Value x, Value m) {
    BoolAttr no = imp.getBuilder().getBoolAttr(false);
    return x && m ? imp.createInferred<MatMulOp>(x, m, no, no) : Value();
  }
};

} // namespace

/// The DFT of `x` ([..., 1] real or [..., 2] complex) along `axis` (not
/// the last), length L: [..., K at axis, ..., 2].
static Value dftAlong(NodeImporter &imp, Value x, int64_t axis, int64_t length,
                      bool inverse, bool onesided) {
  Expr e(imp);
  ArrayRef<int64_t> shape = getShape(x);
  int64_t rank = static_cast<int64_t>(shape.size());
  bool complex = shape.back() == 2;
  // The parts, with the transformed axis moved last: [rest, N].
  SmallVector<int64_t> perm, rest;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != axis) {
      perm.push_back(d);
      rest.push_back(shape[d]);
    }
  perm.push_back(axis);
  int64_t rows = 1;
  for (int64_t d : rest)
    rows *= d;
  SmallVector<int64_t> partShape(shape.drop_back());
  auto part = [&](int64_t k) -> Value {
    Value p = imp.createReshape(e.gatherAt(x, rank - 1, {k}), partShape);
    Value moved = p ? imp.createInferred<TransposeOp>(
                          p, imp.getBuilder().getDenseI64ArrayAttr(perm))
                    : Value();
    return imp.createReshape(moved, {rows, shape[axis]});
  };
  Value re = part(0);
  Value im = complex ? part(1) : Value();
  if (!re || (complex && !im))
    return {};
  auto [outRe, outIm] = RowDft{imp, length, inverse, onesided}.apply(re, im);
  if (!outRe || !outIm)
    return {};
  int64_t k = getShape(outRe)[1];
  // Back to [..., K at axis, ..., 1] for each part, then joined.
  SmallVector<int64_t> movedShape(rest);
  movedShape.push_back(k);
  SmallVector<int64_t> inverseperm(rank - 1);
  for (auto [i, d] : llvm::enumerate(perm))
    inverseperm[d] = static_cast<int64_t>(i);
  SmallVector<int64_t> outShape(shape.drop_back());
  outShape[axis] = k;
  outShape.push_back(1);
  auto back = [&](Value v) -> Value {
    Value shaped = imp.createReshape(v, movedShape);
    Value moved =
        shaped ? imp.createInferred<TransposeOp>(
                     shaped, imp.getBuilder().getDenseI64ArrayAttr(inverseperm))
               : Value();
    return imp.createReshape(moved, outShape);
  };
  Value a = back(outRe), b = back(outIm);
  if (!a || !b)
    return {};
  return imp.createInferred<ConcatOp>(
      ValueRange{a, b}, imp.getBuilder().getI64IntegerAttr(rank - 1));
}

/// A constant scalar length input, or `fallback` when absent.
static std::optional<int64_t> lengthInput(NodeImporter &imp, unsigned i,
                                          StringRef what, int64_t fallback) {
  if (!imp.hasInput(i))
    return fallback;
  std::optional<SmallVector<int64_t>> given =
      imp.getConstantInts(i, what, NodeImporter::kNeedsImportTimeValue);
  if (!given)
    return std::nullopt;
  if (given->size() != 1 || given->front() < 1) {
    (void)imp.emitError("input '" + what + "' must be one positive count");
    return std::nullopt;
  }
  return given->front();
}

/// The signal input (float, last dim 1 or 2, at least `minRank` dims).
static Value signalInput(NodeImporter &imp, StringRef what, int64_t minRank) {
  Value x = imp.getInput(0, what);
  if (!x)
    return {};
  if (!isa<FloatType>(getElementType(x)) || getRank(x) < minRank ||
      (getShape(x).back() != 1 && getShape(x).back() != 2)) {
    (void)imp.emitError("input '" + what + "' (" + formatType(x.getType()) +
                        ") should be a float [..., 1] (real) or [..., 2] "
                        "(complex) signal of rank " +
                        Twine(minRank) + " or more");
    return {};
  }
  return x;
}

LogicalResult onnx_import::importDFT(NodeImporter &imp) {
  Value x = signalInput(imp, "input", 3);
  if (!x)
    return failure();
  int64_t rank = getRank(x);
  // Opset 20 moved the axis from an attribute (default 1) to input 2
  // (default -2).
  int64_t axis = imp.getIntAttr("axis", 1);
  if (imp.getOpset() >= 20) {
    std::optional<int64_t> given = -2;
    if (imp.hasInput(2)) {
      std::optional<SmallVector<int64_t>> values =
          imp.getConstantInts(2, "axis", NodeImporter::kNeedsImportTimeValue);
      if (!values || values->size() != 1)
        return values ? imp.emitError("input 'axis' must hold one value")
                      : failure();
      given = values->front();
    }
    axis = *given;
  }
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank - 2)
    return imp.emitError("the DFT axis " + Twine(axis) +
                         " is out of range for " + formatType(x.getType()) +
                         " (the last dim holds the complex parts)");
  bool inverse = imp.getIntAttr("inverse", 0) != 0;
  bool onesided = imp.getIntAttr("onesided", 0) != 0;
  std::optional<int64_t> length =
      lengthInput(imp, 1, "dft_length", getShape(x)[axis]);
  if (!length || imp.hasError())
    return failure();
  if (onesided && (inverse || getShape(x).back() == 2))
    return imp.emitError("onesided output is defined for a forward DFT of a "
                         "real signal");
  return imp.setResult(dftAlong(imp, x, axis, *length, inverse, onesided));
}

/// STFT: frames of frame_length samples every frame_step (gathered at
/// constant positions), times the window, each transformed: [batch, frames,
/// bins, 2].
LogicalResult onnx_import::importSTFT(NodeImporter &imp) {
  Expr e(imp);
  Value x = signalInput(imp, "signal", 3);
  if (!x)
    return failure();
  if (getRank(x) != 3)
    return imp.emitError("input 'signal' (" + formatType(x.getType()) +
                         ") should be [batch, length, 1 or 2]");
  std::optional<int64_t> step = lengthInput(imp, 1, "frame_step", 0);
  Value window = imp.getOptionalInput(2);
  int64_t windowLength = window ? getShape(window).back() : 0;
  std::optional<int64_t> frameLength =
      lengthInput(imp, 3, "frame_length", windowLength);
  bool onesided = imp.getIntAttr("onesided", 1) != 0;
  if (!step || !frameLength || imp.hasError())
    return failure();
  if (*step < 1)
    return imp.emitError("missing required input 'frame_step'");
  if (*frameLength < 1)
    return imp.emitError("STFT needs a window or a frame_length");
  if (window && (getRank(window) != 1 || windowLength != *frameLength))
    return imp.emitError("input 'window' (" + formatType(window.getType()) +
                         ") should hold frame_length = " + Twine(*frameLength) +
                         " values");
  if (onesided && getShape(x).back() == 2)
    return imp.emitError("onesided output is defined for a real signal");
  int64_t samples = getShape(x)[1];
  if (*frameLength > samples)
    return imp.emitError("frame_length " + Twine(*frameLength) +
                         " is longer than the signal (" + Twine(samples) + ")");
  int64_t frames = (samples - *frameLength) / *step + 1;
  SmallVector<int64_t> positions;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t i = 0; i < *frameLength; ++i)
      positions.push_back(f * *step + i);
  auto indexType = RankedTensorType::get({frames, *frameLength},
                                         imp.getBuilder().getI64Type());
  Value index = imp.createConstant(
      DenseElementsAttr::get(indexType, ArrayRef(positions)));
  Value framed = index ? imp.createInferred<GatherOp>(
                             x, index, imp.getBuilder().getI64IntegerAttr(1))
                       : Value();
  if (framed && window) {
    Value w = imp.createReshape(imp.createCast(window, getElementType(x)),
                                {1, 1, *frameLength, 1});
    framed = e.mul(framed, w);
  }
  if (!framed)
    return failure();
  return imp.setResult(
      dftAlong(imp, framed, 2, *frameLength, /*inverse=*/false, onesided));
}
