//===- LowerCollectives.h - Collectives for the runtime ---------*- C++ -*-===//
//
// What weft-lower-to-runtime (passes/LowerToRuntime.cpp) needs to turn
// collectives and sharding annotations into runtime launches and slot
// attributes: a collective's kernel and its attributes, a value's or an
// input's split as the runtime reads it, and the ZeRO buckets it moves
// where their pieces lie. Not an interface: only the lowering includes it.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_PASSES_LOWERCOLLECTIVES_H
#define WEFT_PASSES_LOWERCOLLECTIVES_H

#include "dialects/weft/Sharding.h"
#include "dialects/weft/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>

namespace weft::lowering {

/// The runtime kernel of a `shard` collective or weft.all_reduce_start
/// (KernelABI.h), with its attributes; failure (diagnosed) for a reduction
/// the runtime lacks; none for any other op.
std::optional<mlir::LogicalResult>
collectiveKernel(mlir::Operation *op, llvm::StringRef &kernel,
                 llvm::SmallVectorImpl<int64_t> &attrs);

/// A `weft.shard` annotation as the runtime reads it: {dim, mesh_axes} of
/// the one split dimension; none for a partial or multiply split tensor.
std::optional<mlir::NamedAttribute>
runtimeShard(mlir::Builder &b, mlir::Attribute attr, int64_t rank);

/// An input's splits as the runtime feeds them (ModelABI.h): "shard" along
/// one dim or, with data and sequence parallelism, "shard" along its rows
/// and "sequence_shard" along its sequence; none for any other split.
std::optional<llvm::SmallVector<mlir::NamedAttribute, 2>>
inputShards(mlir::Builder &b, mlir::Attribute attr, int64_t rank);

/// Buckets the runtime moves where their pieces lie (unpacked-buckets): a
/// reduce-scatter along dim 0 of a [g, K] concatenation (along dim 1) of
/// [g, k_i] pieces that nothing else reads becomes reduce_scatter_pieces on
/// the pieces themselves, and an all-gather along dim 0 into [g, K] whose
/// result (or its comm_wait's) only a split along dim 1 reads becomes
/// all_gather_pieces straight into the split's results. The concat and the
/// split, and their copies, go away. These are BucketCollectives' ZeRO
/// buckets, whose pieces are each gradient's or parameter's ranks' blocks.
struct PieceBuckets {
  llvm::DenseMap<mlir::Operation *, ConcatOp>
      packedBy; ///< reduce-scatter -> concat
  llvm::DenseMap<mlir::Operation *, SplitOp>
      unpackedBy;                           ///< all-gather -> split
  llvm::DenseSet<mlir::Operation *> folded; ///< those concats and splits

  /// Finds them in `block`.
  void find(mlir::Block &block);
};

} // namespace weft::lowering

#endif // WEFT_PASSES_LOWERCOLLECTIVES_H
