//===- GradientRules.h - Building blocks of weft's gradient rules -*- C++
//-*-===//
//
// The gradient rules (GradientOpInterface, in GradientRules*.cpp by op
// family) build their derivatives from weft ops. These helpers create those
// ops with explicit result types, computed here from the operands, so that
// a rule never depends on type inference succeeding: a mistake shows up as
// a verifier error naming the op, not as a crash.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECTS_WEFT_GRADIENTRULES_H
#define WEFT_DIALECTS_WEFT_GRADIENTRULES_H

#include "dialects/weft/WeftOps.h"

namespace weft {
namespace gradient {

/// Whether `type` is a ranked tensor of floats: only those carry gradients.
bool isFloatTensor(mlir::Type type);

/// A splat weft.constant of `type` (a float or integer tensor) holding
/// `value`.
mlir::Value splat(mlir::OpBuilder &b, mlir::Location loc,
                  mlir::RankedTensorType type, double value);
/// A rank-0 weft.constant of `elementType` holding `value`; broadcasting
/// binary ops take it as a scalar.
mlir::Value scalar(mlir::OpBuilder &b, mlir::Location loc,
                   mlir::Type elementType, double value);
/// A rank-0 constant with `like`'s element type.
mlir::Value scalarLike(mlir::OpBuilder &b, mlir::Location loc, mlir::Value like,
                       double value);

/// Broadcasting elementwise ops; the result type is the numpy broadcast of
/// the operands (the lhs type when they do not broadcast, which the verifier
/// then reports).
mlir::Value add(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs,
                mlir::Value rhs);
mlir::Value sub(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs,
                mlir::Value rhs);
mlir::Value mul(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs,
                mlir::Value rhs);
mlir::Value div(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs,
                mlir::Value rhs);
mlir::Value neg(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
/// `x` converted to a float tensor of `elementType` (masks from compares).
mlir::Value castTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                   mlir::Type elementType);

/// `x` reshaped to `shape` (returned as is when it already has it).
mlir::Value reshape(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                    llvm::ArrayRef<int64_t> shape);
/// reduce_sum of `x` over `axes` (ascending, non-empty).
mlir::Value reduceSum(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                      llvm::ArrayRef<int64_t> axes, bool keepdims);

/// The gradient of an operand that was broadcast to `grad`'s shape: `grad`
/// summed over the dims the broadcast added or stretched, then reshaped to
/// `type` (numpy broadcasting's adjoint). `grad` as is when the shapes agree.
mlir::Value sumToShape(mlir::OpBuilder &b, mlir::Location loc, mlir::Value grad,
                       mlir::RankedTensorType type);

/// `grad`, or zeros of `type` where it is null (no gradient flowed).
mlir::Value gradOrZeros(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value grad, mlir::Type type);

/// The result gradient of a single-result op; fills `operandGrads` with
/// nulls and returns null when none flows or the result is not a float
/// tensor.
mlir::Value singleResultGrad(mlir::Operation *op,
                             llvm::ArrayRef<mlir::Value> resultGrads,
                             llvm::SmallVectorImpl<mlir::Value> &operandGrads);

} // namespace gradient
} // namespace weft

#endif // WEFT_DIALECTS_WEFT_GRADIENTRULES_H
