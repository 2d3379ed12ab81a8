//===- VocabParallel.h - Lookups into data split along the looked-up dim --===//
//
// Megatron's vocabulary parallelism, as the partitioner builds it. An
// embedding table split by rows, or the scores of a cross-entropy split by
// class, hold one block of the looked-up dim per rank. Each rank then:
//   - gathers the indices inside its block and zeros elsewhere, so the sum
//     over the block's axes is the gather (the caller's partial sum);
//   - scatters only those indices (the table's gradient, already split);
//   - takes the log-sum-exp of its classes and combines it with the other
//     ranks' (all_reduce of the max, then of the sum of exponentials), and
//     picks the label's score where the label is one of its classes.
// This rank's block starts at weft.mesh_offset; everything else is plain
// weft ops with local shapes.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_PASSES_VOCABPARALLEL_H
#define WEFT_PASSES_VOCABPARALLEL_H

#include "dialects/weft/Sharding.h"
#include "dialects/weft/WeftOps.h"

namespace weft {
namespace vocab {

/// Indices made local to this rank's block of a dim of `extent` elements,
/// `block` per rank: `safe` (in [0, block), 0 outside the block) and
/// `inRange` (whether the index falls in the block). Negative indices count
/// from the end, as weft.gather's do.
struct LocalIndices {
  mlir::Value safe;
  mlir::Value inRange;
};

class Builder {
public:
  Builder(mlir::OpBuilder &b, const Mesh &mesh, MeshAxes axes)
      : b(b), mesh(mesh), axes(std::move(axes)) {}

  /// Where this rank's block of `block` elements starts, as a rank-0
  /// tensor of `elementType` (an integer type).
  mlir::Value offset(mlir::Location loc, int64_t block, mlir::Type elementType);
  LocalIndices localIndices(mlir::Location loc, mlir::Value indices,
                            int64_t extent, int64_t block);

  /// gather(data, indices) along `axis` of data holding one block, zeros
  /// where an index is outside it.
  mlir::Value gather(mlir::Location loc, mlir::Value data,
                     const LocalIndices &indices, int64_t axis,
                     mlir::RankedTensorType resultType);
  /// scatter_add of `updates` at the indices inside the block only, into
  /// the block (`resultType`).
  mlir::Value scatterAdd(mlir::Location loc, const LocalIndices &indices,
                         mlir::Value updates, int64_t axis,
                         mlir::RankedTensorType resultType);

  /// log(sum(exp(scores))) over the classes (dim 1) of every rank's block:
  /// [N, 1, d...].
  mlir::Value logSumExp(mlir::Location loc, mlir::Value scores);
  /// Whether each class of this rank's block of `scores` [N, C/g, d...] is
  /// the row's label (labels [N, d...]): bool [N, C/g, d...].
  mlir::Value labelMask(mlir::Location loc, mlir::Value scores,
                        mlir::Value labels);
  /// The labels' scores, combined over the block's axes: [N, 1, d...].
  mlir::Value labelScores(mlir::Location loc, mlir::Value scores,
                          mlir::Value mask);

private:
  mlir::Value allReduce(mlir::Location loc, mlir::Value v,
                        mlir::shard::ReductionKind kind);
  mlir::Value intScalar(mlir::Location loc, mlir::Type elementType,
                        int64_t value);

  mlir::OpBuilder &b;
  const Mesh &mesh;
  MeshAxes axes;
};

} // namespace vocab
} // namespace weft

#endif // WEFT_PASSES_VOCABPARALLEL_H
