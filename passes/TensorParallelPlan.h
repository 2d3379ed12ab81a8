//===- TensorParallelPlan.h - Megatron-style splits found by trial -*- C++
//-*-===//
#ifndef WEFT_PASSES_TENSORPARALLELPLAN_H
#define WEFT_PASSES_TENSORPARALLELPLAN_H

#include "dialects/weft/Sharding.h"
#include "dialects/weft/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

namespace weft {

/// The parameters to split over mesh axis `axis` (tensor parallelism) in the
/// training step `func`, by name, with their shardings; the inputs' own
/// `weft.shard` annotations are taken into account. See the .cpp.
llvm::StringMap<TensorSharding>
planTensorParallel(mlir::func::FuncOp func, const Mesh &mesh, MeshAxis axis);

} // namespace weft

#endif // WEFT_PASSES_TENSORPARALLELPLAN_H
