//===- ShardingRules.h - What each weft op can compute on blocks ----------===//
//
// planSharding(op, operand shardings) answers, for one op of the global
// program: which sharding each operand must have for the op to run on each
// rank's blocks alone, and the sharding of its results then. Dimensions an
// op works across (a softmax axis, a reshape that would mix blocks, a
// contraction split on one side only) must be whole; the partitioner
// gathers them. Contracting or reducing a split dimension leaves partial
// sums (`partial`); ops linear in such an operand keep them, everything
// else makes the partitioner add them up first (all_reduce). Ops whose
// kernels divide by a global count (means, the cross-entropy's mean) say so
// in `fixup`, and the partitioner rescales their local results. Lookups
// into data split along the looked-up dim (an embedding table or the
// classes of a cross-entropy split by vocabulary) are fixups too: the
// partitioner masks them by this rank's block.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECTS_WEFT_SHARDINGRULES_H
#define WEFT_DIALECTS_WEFT_SHARDINGRULES_H

#include "dialects/weft/Sharding.h"

#include "mlir/IR/Operation.h"

#include <optional>

namespace weft {

struct ShardingPlan {
  llvm::SmallVector<TensorSharding, 2> operands;
  llvm::SmallVector<TensorSharding, 2> results;
  enum class Fixup {
    None,
    /// Multiply every float result by `scale` (a mean over split dims:
    /// the kernel divided by the local count, the program means the global).
    Scale,
    /// softmax_cross_entropy(_grad) with mean reduction over split rows:
    /// compute the local sum and divide by the global count of counted
    /// labels (an all_reduce over `countAxes`).
    CrossEntropyMean,
    /// slice / slice_grad: `starts` index the global dims; a window that is
    /// one block of a strided split starts elsewhere in the local block.
    LocalStarts,
    /// gather whose data is split along the indexed dim over `blockAxes`
    /// (a vocabulary-parallel embedding): each rank looks up the indices
    /// in its block, zeros elsewhere, and the result is a partial sum.
    BlockGather,
    /// softmax_cross_entropy(_grad) with the class dim split over
    /// `blockAxes` (vocabulary-parallel): the log-sum-exp and the label's
    /// score are combined over those axes by all_reduce; `countAxes` are
    /// the row axes, as for CrossEntropyMean.
    ClassBlocks,
  } fixup = Fixup::None;
  double scale = 1.0;
  MeshAxes countAxes;
  MeshAxes blockAxes;
};

/// The split a window [start, start + size) with `step` of a dim of size n
/// keeps of the dim's split `full`: when `full` is strided and the window
/// is a run of whole blocks, a split of that many blocks (a packed
/// projection's q: one block, plain; its k and v: two); else none.
std::optional<DimSharding> windowSplit(int64_t n, int64_t start, int64_t size,
                                       int64_t step, const DimSharding &full);

/// The other way: the split of the whole dim whose window is split as
/// `window`, each of its blocks one block of the dim (a window of two blocks
/// of 32 rows out of 96: the dim in 3 blocks); none where the window is no
/// run of whole blocks.
std::optional<DimSharding> fullSplitOfWindow(int64_t n, int64_t start,
                                             int64_t size, int64_t step,
                                             const DimSharding &window);

/// The plan for `op` given its operands' current shardings. Fails with
/// `error` set for an op the partitioner has no rule for.
mlir::FailureOr<ShardingPlan>
planSharding(mlir::Operation *op, llvm::ArrayRef<TensorSharding> operands,
             const Mesh &mesh, std::string &error);

} // namespace weft

#endif // WEFT_DIALECTS_WEFT_SHARDINGRULES_H
