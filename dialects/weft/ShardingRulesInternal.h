//===- ShardingRulesInternal.h - Shared by the sharding rules ---*- C++ -*-===//
//
// What ShardingRules.cpp (elementwise ops, products, reshapes, reductions,
// the dispatch) and ShardingRulesData.cpp (lookups, windows, losses, ops
// split by batch only) share. Not part of the dialect's interface.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECTS_WEFT_SHARDINGRULESINTERNAL_H
#define WEFT_DIALECTS_WEFT_SHARDINGRULESINTERNAL_H

#include "dialects/weft/ShardingRules.h"
#include "dialects/weft/WeftOps.h"

#include <string>

namespace weft::sharding {

using Plan = ShardingPlan;

inline mlir::RankedTensorType tensorType(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType());
}

inline bool isFloat(mlir::Value v) {
  return mlir::isa<mlir::FloatType>(tensorType(v).getElementType());
}

/// Removes, from later dims, mesh axes an earlier dim already uses (a mesh
/// axis can split one dimension only); a dim split twice keeps the part
/// that does not clash.
void dedupeAxes(llvm::MutableArrayRef<DimSharding> dims, MeshAxes &used);

/// slice (`grad` false) and slice_grad (true).
Plan window(mlir::Operation *op, llvm::ArrayRef<TensorSharding> in, bool grad);
Plan gather(GatherOp op, llvm::ArrayRef<TensorSharding> in);
Plan scatterAdd(ScatterAddOp op, llvm::ArrayRef<TensorSharding> in);
/// Convolutions, pools, batch normalization and their gradients.
Plan batchOnly(mlir::Operation *op, llvm::ArrayRef<TensorSharding> in);
mlir::FailureOr<Plan> crossEntropy(SoftmaxCrossEntropyOp op,
                                   llvm::ArrayRef<TensorSharding> in,
                                   std::string &error);
mlir::FailureOr<Plan> crossEntropy(SoftmaxCrossEntropyGradOp op,
                                   llvm::ArrayRef<TensorSharding> in,
                                   std::string &error);

} // namespace weft::sharding

#endif // WEFT_DIALECTS_WEFT_SHARDINGRULESINTERNAL_H
