//===- DropoutPositions.h - A dropout's block of the whole tensor -*- C++
//-*-===//
//
// weft.dropout draws each element's mask from its position in the whole
// tensor (runtime/kernels/cpu/DropoutDraw.h). When the partitioner gives a
// rank a block, the op must say where that block starts; this builds it.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_PASSES_DROPOUTPOSITIONS_H
#define WEFT_PASSES_DROPOUTPOSITIONS_H

#include "dialects/weft/Sharding.h"
#include "dialects/weft/WeftOps.h"

namespace weft {

/// `dropout`, already at the local shape of `split` (its input's sharding),
/// made to draw the whole tensor's masks (details at the definition).
/// Returns its local results (output, mask); the op may be replaced.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
localizeDropout(mlir::OpBuilder &b, const Mesh &mesh, DropoutOp dropout,
                const TensorSharding &split);

} // namespace weft

#endif // WEFT_PASSES_DROPOUTPOSITIONS_H
