//===- Reshard.h - The collectives that move one dim's split ----*- C++ -*-===//
//
// weft-partition's building blocks for changing how one dimension is split
// over the mesh: cutting a rank's block out of a whole value (all_slice, no
// communication), joining the blocks (all_gather), and joining one part of
// a dim split twice. A dim split with `outer` > 1 is seen as [outer, rest]
// between two reshapes, so its interleaved blocks become plain ones
// (passes/Partition.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_PASSES_RESHARD_H
#define WEFT_PASSES_RESHARD_H

#include "dialects/weft/Sharding.h"

#include "mlir/IR/Builders.h"

namespace weft {

/// This rank's block of dim `dim` of `whole`, split as `split`.
mlir::Value sliceDim(mlir::OpBuilder &b, const Mesh &mesh, mlir::Value whole,
                     int64_t dim, const DimSharding &split, mlir::Location loc);

/// Dim `dim` of `local` (split as `split`) joined.
mlir::Value gatherDim(mlir::OpBuilder &b, const Mesh &mesh, mlir::Value local,
                      int64_t dim, const DimSharding &split,
                      mlir::Location loc);

/// One part of dim `dim` of `local`, seen as [localOuter, rest], joined
/// over `axes`: the outer part (`outerPart`) or the rest.
mlir::Value gatherDimPart(mlir::OpBuilder &b, const Mesh &mesh,
                          mlir::Value local, int64_t dim, int64_t localOuter,
                          bool outerPart, const MeshAxes &axes,
                          mlir::Location loc);

} // namespace weft

#endif // WEFT_PASSES_RESHARD_H
