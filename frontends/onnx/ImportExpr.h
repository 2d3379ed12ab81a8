//===- ImportExpr.h - Elementwise expressions for op importers --*- C++ -*-===//
//
// Internal to the ONNX frontend: a small builder of elementwise weft ops on
// one node, for ONNX ops that weft builds from its own (ImportActivations.cpp,
// the composed reductions of ImportNeuralNet.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_FRONTENDS_ONNX_IMPORTEXPR_H
#define WEFT_FRONTENDS_ONNX_IMPORTEXPR_H

#include "frontends/onnx/NodeImporter.h"

#include "dialects/weft/WeftOps.h"

namespace weft::onnx_import {

/// Builds elementwise expressions on one node, stopping at the first error
/// (every builder passes a null operand through).
class Expr {
public:
  explicit Expr(NodeImporter &imp) : imp(imp) {}

  /// A rank-0 constant of `like`'s element type.
  mlir::Value scalar(mlir::Value like, double value) {
    return like ? imp.createScalar(getElementType(like), value) : mlir::Value();
  }
  template <typename OpTy>
  mlir::Value binary(mlir::Value lhs, mlir::Value rhs) {
    return lhs && rhs ? imp.createInferred<OpTy>(lhs, rhs) : mlir::Value();
  }
  template <typename OpTy> mlir::Value unary(mlir::Value x) {
    return x ? imp.create<OpTy>(x.getType(), x) : mlir::Value();
  }
  mlir::Value add(mlir::Value a, mlir::Value b) { return binary<AddOp>(a, b); }
  mlir::Value sub(mlir::Value a, mlir::Value b) { return binary<SubOp>(a, b); }
  mlir::Value mul(mlir::Value a, mlir::Value b) { return binary<MulOp>(a, b); }
  mlir::Value div(mlir::Value a, mlir::Value b) { return binary<DivOp>(a, b); }
  mlir::Value min(mlir::Value a, mlir::Value b) { return binary<MinOp>(a, b); }
  mlir::Value less(mlir::Value a, mlir::Value b) {
    return binary<LessOp>(a, b);
  }
  mlir::Value greater(mlir::Value a, mlir::Value b) {
    return binary<GreaterOp>(a, b);
  }
  mlir::Value select(mlir::Value cond, mlir::Value x, mlir::Value y) {
    return cond && x && y ? imp.createInferred<WhereOp>(cond, x, y)
                          : mlir::Value();
  }
  mlir::Value mulScalar(mlir::Value x, double value) {
    return mul(x, scalar(x, value));
  }
  mlir::Value addScalar(mlir::Value x, double value) {
    return add(x, scalar(x, value));
  }

  /// `x` limited to [lo, hi] (either may be null: no bound). Where lo > hi
  /// every element is hi, as in ONNX and numpy.
  mlir::Value clip(mlir::Value x, mlir::Value lo, mlir::Value hi) {
    if (lo)
      x = select(less(x, lo), lo, x);
    if (hi)
      x = select(greater(x, hi), hi, x);
    return x;
  }
  /// ln(1 + exp(x)), x itself above 20 (PyTorch's threshold), where the
  /// difference is below f32's resolution and exp could overflow.
  mlir::Value softplus(mlir::Value x) {
    mlir::Value threshold = scalar(x, 20.0);
    mlir::Value e = unary<ExpOp>(min(x, threshold));
    return select(greater(x, threshold), x, unary<LogOp>(addScalar(e, 1.0)));
  }
  /// alpha * (exp(x) - 1) for x <= 0, x above.
  mlir::Value elu(mlir::Value x, double alpha) {
    mlir::Value zero = scalar(x, 0.0);
    mlir::Value negative =
        mulScalar(addScalar(unary<ExpOp>(min(x, zero)), -1.0), alpha);
    return select(greater(x, zero), x, negative);
  }
  /// max(0, min(1, alpha * x + beta)).
  mlir::Value hardSigmoid(mlir::Value x, double alpha, double beta) {
    return clip(addScalar(mulScalar(x, alpha), beta), scalar(x, 0.0),
                scalar(x, 1.0));
  }

  /// The slices of `data` along `axis` at `indices`, fixed at import (a
  /// weft.gather of an i64 constant).
  mlir::Value gatherAt(mlir::Value data, int64_t axis,
                       llvm::ArrayRef<int64_t> indices) {
    if (!data)
      return {};
    auto type = mlir::RankedTensorType::get(
        {static_cast<int64_t>(indices.size())}, imp.getBuilder().getI64Type());
    mlir::Value index =
        imp.createConstant(mlir::DenseElementsAttr::get(type, indices));
    if (!index)
      return {};
    return imp.createInferred<GatherOp>(
        data, index, imp.getBuilder().getI64IntegerAttr(axis));
  }

  /// |x| = relu(x) + relu(-x): exact, and its gradient is 0 at 0.
  mlir::Value abs(mlir::Value x) {
    return add(unary<ReluOp>(x), unary<ReluOp>(unary<NegOp>(x)));
  }
  /// x above 0, alpha * x elsewhere (the gradient at 0 is alpha, as in
  /// PyTorch's leaky_relu).
  mlir::Value leakyRelu(mlir::Value x, double alpha) {
    return select(greater(x, scalar(x, 0.0)), x, mulScalar(x, alpha));
  }
  /// x above alpha, 0 elsewhere.
  mlir::Value thresholdedRelu(mlir::Value x, double alpha) {
    return select(greater(x, scalar(x, alpha)), x, scalar(x, 0.0));
  }
  /// x / (1 + |x|).
  mlir::Value softsign(mlir::Value x) { return div(x, addScalar(abs(x), 1.0)); }

private:
  NodeImporter &imp;
};

} // namespace weft::onnx_import

#endif // WEFT_FRONTENDS_ONNX_IMPORTEXPR_H
