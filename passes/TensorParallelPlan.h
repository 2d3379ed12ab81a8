//===- TensorParallelPlan.h - Megatron-style splits found by trial -*- C++
//-*-===//
#ifndef WEFT_PASSES_TENSORPARALLELPLAN_H
#define WEFT_PASSES_TENSORPARALLELPLAN_H

#include "dialects/weft/Sharding.h"
#include "dialects/weft/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

namespace weft {

/// What the tensor-parallel choice may trade: seconds per FLOP of a product
/// on one device, seconds per byte and per message of a collective over the
/// tensor-parallel group, and the bytes per rank the parameters, their
/// gradients and optimizer state may take (0: no bound). Without a FLOP
/// price the choice is Megatron's: every split that needs no gather.
struct TensorParallelCosts {
  double flopSeconds = 0, byteSeconds = 0, latency = 0, memoryBytes = 0;
  bool enabled() const { return flopSeconds > 0; }
};

/// The parameters to split over mesh axis `axis` (tensor parallelism) in the
/// training step `func`, by name, with their shardings; the inputs' own
/// `weft.shard` annotations are taken into account. With `costs`, an
/// integer program (Alpa's formulation) chooses per weight whether to
/// split it; `summary` then says what it chose. See the .cpp.
llvm::StringMap<TensorSharding>
planTensorParallel(mlir::func::FuncOp func, const Mesh &mesh, MeshAxis axis,
                   const TensorParallelCosts &costs = {},
                   std::string *summary = nullptr);

} // namespace weft

#endif // WEFT_PASSES_TENSORPARALLELPLAN_H
