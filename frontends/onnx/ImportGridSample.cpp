//===- ImportGridSample.cpp - GridSample from gathers and arithmetic ------===//
//
// ONNX GridSample (PyTorch's F.grid_sample) on 2-D images: each output
// pixel samples X at the position its grid entry gives, built from weft's
// elementwise ops and weft.gathers of the flattened X at computed flat
// positions. So its gradients come from the ops' own rules: X's through the
// gathers (scatter_adds), the grid's through the interpolation weights.
// Coordinates follow PyTorch's grid_sampler: unnormalized with or without
// align_corners; border padding clips them, reflection padding reflects
// them about the border (the pixel centers with align_corners, the image's
// edges without) and clips; zeros padding masks the taps outside. Bilinear
// takes 4 taps, nearest 1 (ties to even), bicubic 16 (A = -0.75, padding
// applied to each tap's position).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImportExpr.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/WeftOps.h"

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

namespace {

enum class Padding { Zeros, Border, Reflection };

/// The sampling of one GridSample node: X [N, C, H, W], positions as
/// [N, 1, Ho, Wo] float tensors (x along W, y along H).
class Sampler {
public:
  Sampler(NodeImporter &imp, Value x, bool align, Padding padding)
      : imp(imp), e(imp), align(align), padding(padding) {
    ArrayRef<int64_t> shape = getShape(x);
    n = shape[0];
    c = shape[1];
    h = shape[2];
    w = shape[3];
    flat = imp.createReshape(x, {n * c * h * w});
    // Where each (n, c) plane starts in the flattened X.
    SmallVector<int64_t> starts;
    for (int64_t i = 0; i < n * c; ++i)
      starts.push_back(i * h * w);
    auto type =
        RankedTensorType::get({n, c, 1, 1}, imp.getBuilder().getI64Type());
    planeStart =
        imp.createConstant(DenseElementsAttr::get(type, ArrayRef(starts)));
  }

  /// A normalized grid coordinate in [-1, 1] as a pixel position.
  Value unnormalize(Value g, int64_t size) {
    return align ? e.mulScalar(e.addScalar(g, 1.0), (size - 1) / 2.0)
                 : e.mulScalar(e.addScalar(e.mulScalar(g, size), size - 1.0),
                               0.5);
  }

  /// `coord` with the padding mode applied (border and reflection: moved
  /// inside [0, size - 1]; zeros: as it is).
  Value pad(Value coord, int64_t size) {
    if (padding == Padding::Zeros)
      return coord;
    if (padding == Padding::Reflection)
      coord = align ? reflect(coord, 0.0, size - 1.0)
                    : reflect(coord, -0.5, static_cast<double>(size));
    return e.clip(coord, e.scalar(coord, 0.0), e.scalar(coord, size - 1.0));
  }

  /// X at integer-valued positions (xi, yi), [N, C, Ho, Wo]; 0 outside the
  /// image under zeros padding (the other modes padded the positions).
  Value at(Value xi, Value yi) {
    Value xc = e.clip(xi, e.scalar(xi, 0.0), e.scalar(xi, w - 1.0));
    Value yc = e.clip(yi, e.scalar(yi, 0.0), e.scalar(yi, h - 1.0));
    Type i64 = imp.getBuilder().getI64Type();
    Value offset =
        e.add(e.mul(imp.createCast(yc, i64), e.scalar(planeStart, w)),
              imp.createCast(xc, i64));
    Value positions = e.add(planeStart, offset);
    Value taken = positions && flat ? imp.createInferred<GatherOp>(
                                          flat, positions,
                                          imp.getBuilder().getI64IntegerAttr(0))
                                    : Value();
    if (padding != Padding::Zeros)
      return taken;
    auto inside = [&](Value v, int64_t size) {
      return e.binary<AndOp>(
          e.unary<NotOp>(e.less(v, e.scalar(v, 0.0))),
          e.unary<NotOp>(e.greater(v, e.scalar(v, size - 1.0))));
    };
    Value valid = e.binary<AndOp>(inside(xi, w), inside(yi, h));
    return e.select(valid, taken, e.scalar(taken, 0.0));
  }

  Value bilinear(Value x, Value y) {
    x = pad(x, w);
    y = pad(y, h);
    Value x0 = e.unary<FloorOp>(x), y0 = e.unary<FloorOp>(y);
    Value x1 = e.addScalar(x0, 1.0), y1 = e.addScalar(y0, 1.0);
    Value wx1 = e.sub(x, x0), wy1 = e.sub(y, y0);
    Value wx0 = e.sub(e.scalar(x, 1.0), wx1),
          wy0 = e.sub(e.scalar(y, 1.0), wy1);
    Value top = e.add(e.mul(wx0, at(x0, y0)), e.mul(wx1, at(x1, y0)));
    Value bottom = e.add(e.mul(wx0, at(x0, y1)), e.mul(wx1, at(x1, y1)));
    return e.add(e.mul(wy0, top), e.mul(wy1, bottom));
  }

  Value nearest(Value x, Value y) {
    return at(e.unary<RoundOp>(pad(x, w)), e.unary<RoundOp>(pad(y, h)));
  }

  Value bicubic(Value x, Value y) {
    Value x0 = e.unary<FloorOp>(x), y0 = e.unary<FloorOp>(y);
    SmallVector<Value, 4> wx = cubicWeights(e.sub(x, x0));
    SmallVector<Value, 4> wy = cubicWeights(e.sub(y, y0));
    Value sum;
    for (int j = 0; j < 4; ++j) {
      Value yj = pad(e.addScalar(y0, j - 1.0), h);
      Value row;
      for (int i = 0; i < 4; ++i) {
        Value term = e.mul(wx[i], at(pad(e.addScalar(x0, i - 1.0), w), yj));
        row = row ? e.add(row, term) : term;
      }
      Value weighted = e.mul(wy[j], row);
      sum = sum ? e.add(sum, weighted) : weighted;
    }
    return sum;
  }

private:
  /// Reflects `coord` about [min, min + span] until it lies inside.
  Value reflect(Value coord, double min, double span) {
    if (span <= 0)
      return e.mulScalar(coord, 0.0);
    Value d = e.abs(e.addScalar(coord, -min));
    Value flips = e.unary<FloorOp>(e.mulScalar(d, 1.0 / span));
    Value extra = e.sub(d, e.mulScalar(flips, span));
    // odd = flips mod 2: 0 keeps min + extra, 1 gives min + span - extra.
    Value odd = e.sub(
        flips, e.mulScalar(e.unary<FloorOp>(e.mulScalar(flips, 0.5)), 2.0));
    Value across =
        e.mul(odd, e.sub(e.scalar(d, span), e.mulScalar(extra, 2.0)));
    return e.addScalar(e.add(extra, across), min);
  }

  /// The weights of the taps at -1, 0, 1, 2 from the position's fraction t
  /// (Keys' cubic convolution, A = -0.75, as PyTorch's).
  SmallVector<Value, 4> cubicWeights(Value t) {
    const double a = -0.75;
    auto near = [&](Value s) { // |s| <= 1: ((A + 2) s - (A + 3)) s^2 + 1
      return e.addScalar(
          e.mul(e.addScalar(e.mulScalar(s, a + 2), -(a + 3)), e.mul(s, s)),
          1.0);
    };
    auto far = [&](Value s) { // 1 < |s| < 2: ((A s - 5A) s + 8A) s - 4A
      return e.addScalar(
          e.mul(e.addScalar(e.mul(e.addScalar(e.mulScalar(s, a), -5 * a), s),
                            8 * a),
                s),
          -4 * a);
    };
    Value rest = e.sub(e.scalar(t, 1.0), t);
    return {far(e.addScalar(t, 1.0)), near(t), near(rest),
            far(e.addScalar(rest, 1.0))};
  }

  NodeImporter &imp;
  Expr e;
  bool align;
  Padding padding;
  int64_t n = 0, c = 0, h = 0, w = 0;
  Value flat, planeStart;
};

} // namespace

LogicalResult onnx_import::importGridSample(NodeImporter &imp) {
  Expr e(imp);
  Value x = imp.getInput(0, "X");
  Value grid = imp.getInput(1, "grid");
  if (!x || !grid)
    return failure();
  if (getRank(x) != 4)
    return imp.emitError("input X (" + formatType(x.getType()) +
                         ") is not supported: weft samples 2-D images "
                         "(N, C, H, W)");
  ArrayRef<int64_t> xs = getShape(x), gs = getShape(grid);
  if (gs.size() != 4 || gs[0] != xs[0] || gs[3] != 2)
    return imp.emitError(
        "input 'grid' (" + formatType(grid.getType()) +
        ") should be [N, H_out, W_out, 2] with X's N = " + Twine(xs[0]));
  if (!isa<FloatType>(getElementType(x)) ||
      getElementType(grid) != getElementType(x))
    return imp.emitError("inputs X (" + formatType(x.getType()) +
                         ") and grid (" + formatType(grid.getType()) +
                         ") must share one float element type");
  std::string mode = imp.getStringAttr("mode", "bilinear");
  std::string paddingMode = imp.getStringAttr("padding_mode", "zeros");
  bool align = imp.getIntAttr("align_corners", 0) != 0;
  if (imp.hasError())
    return failure();
  Padding padding;
  if (paddingMode == "zeros")
    padding = Padding::Zeros;
  else if (paddingMode == "border")
    padding = Padding::Border;
  else if (paddingMode == "reflection")
    padding = Padding::Reflection;
  else
    return imp.emitUnsupportedAttr("padding_mode", "'" + paddingMode + "'",
                                   "expected zeros, border or reflection");
  // Opset 20 renamed bilinear and bicubic to linear and cubic.
  bool linear = mode == "bilinear" || mode == "linear";
  bool cubic = mode == "bicubic" || mode == "cubic";
  if (!linear && !cubic && mode != "nearest")
    return imp.emitUnsupportedAttr("mode", "'" + mode + "'",
                                   "expected bilinear (linear), nearest or "
                                   "bicubic (cubic)");
  Sampler s(imp, x, align, padding);
  auto coordinate = [&](int64_t k, int64_t size) {
    Value g =
        imp.createReshape(e.gatherAt(grid, 3, {k}), {gs[0], 1, gs[1], gs[2]});
    return g ? s.unnormalize(g, size) : Value();
  };
  Value px = coordinate(0, xs[3]), py = coordinate(1, xs[2]);
  if (!px || !py)
    return failure();
  return imp.setResult(linear  ? s.bilinear(px, py)
                       : cubic ? s.bicubic(px, py)
                               : s.nearest(px, py));
}
