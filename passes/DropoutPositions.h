//===- DropoutPositions.h - A dropout's block of the whole tensor -*- C++
//-*-===//
//
// weft.dropout and weft.random draw each element from its position in the
// whole tensor (runtime/kernels/cpu/DropoutDraw.h, RandomDraw.h). When the
// partitioner gives a rank a block, the op must say where that block starts;
// this builds it.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_PASSES_DROPOUTPOSITIONS_H
#define WEFT_PASSES_DROPOUTPOSITIONS_H

#include "dialects/weft/Sharding.h"
#include "dialects/weft/WeftOps.h"

namespace weft {

/// `draws` (a weft.dropout or weft.random), already at the local shape of
/// `split` (its first operand's sharding), made to draw the whole tensor's
/// numbers (details at the definition). Returns its local results; the op
/// may be replaced.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
localizeDraws(mlir::OpBuilder &b, const Mesh &mesh, mlir::Operation *draws,
              const TensorSharding &split);

} // namespace weft

#endif // WEFT_PASSES_DROPOUTPOSITIONS_H
