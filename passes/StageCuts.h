//===- StageCuts.h - Where a forward model may be cut into stages -*- C++
//-*-===//
//
// The analysis weft-pipeline-stages cuts by, shared with the planner
// (tools/weftc/planner) so the stages it predicts are the ones compiled.
// The compute ops of @main, in program order, may be cut between any two;
// what crosses a cut is every value defined before it and used after it
// (returned values are used at the end); a layer boundary is a cut where
// exactly one such value crosses. An op's balancing cost is its forward
// FLOPs plus as much again per operand whose gradient the backward computes
// (at least 1 per op).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_PASSES_STAGECUTS_H
#define WEFT_PASSES_STAGECUTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace weft {

/// Params and constants: they join the stage of their users.
bool isStageHolder(mlir::Operation *op);

struct ForwardOps {
  /// The compute ops in program order, and each one's index.
  llvm::SmallVector<mlir::Operation *> ops;
  llvm::DenseMap<mlir::Operation *, int64_t> position;
  /// Per cut c (after ops[c]): values and bytes crossing it.
  llvm::SmallVector<int64_t> crossing, crossingBytes;
  /// Prefix sums of the ops' balancing costs (size ops + 1).
  llvm::SmallVector<int64_t> cost;
  /// The cuts where exactly one value crosses.
  llvm::SmallVector<int64_t> layerBoundaries;
};

ForwardOps analyzeForwardOps(mlir::func::FuncOp func);

/// The p - 1 cuts, among `layers`, that make the costliest of `p` stages
/// cheapest (ties: fewer crossing bytes). Needs layers.size() >= p - 1.
llvm::SmallVector<int64_t>
balancedStageCuts(llvm::ArrayRef<int64_t> layers, llvm::ArrayRef<int64_t> cost,
                  llvm::ArrayRef<int64_t> crossingBytes, int64_t p);

} // namespace weft

#endif // WEFT_PASSES_STAGECUTS_H
