//===- Sharding.h - How weft tensors are laid out over a device mesh ------===//
//
// The partitioner (passes/Partition.cpp) keeps the program's global
// semantics: every op still means what it meant on one device. A
// TensorSharding says how one global tensor is held by the ranks of a mesh:
// per dimension, the mesh axes that split it into equal blocks (major axis
// first, as in the `shard` dialect's split_axes), and the mesh axes over
// which the held blocks are partial sums still to be added up (the result of
// contracting a split dimension). The rules of ShardingRules.cpp say, per op,
// which operand shardings it can work on locally and what its results are
// then; the partitioner inserts the collectives that move each value from
// the sharding it has to the one its user needs.
//
// The mesh is a `shard.grid` with weft's axis names on it
// (`weft.mesh_axes = ["dp", "tp"]`); shardings appear in the IR as
// `weft.shard` dictionaries {dims = [[axes of dim 0], ...], partial = [...]}
// on function arguments and weft.param ops.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECTS_WEFT_SHARDING_H
#define WEFT_DIALECTS_WEFT_SHARDING_H

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace weft {

using MeshAxis = int16_t;
using MeshAxes = llvm::SmallVector<MeshAxis, 2>;

/// How one dimension is split. The dimension is viewed as [outer, rest]:
/// each rank holds, for its block of `outer` (contiguous blocks over
/// `outerAxes`, whole when that is empty), its block of `rest` (contiguous
/// blocks over `axes`). outer = 1 is the plain block split. outer > 1
/// arises where a reshape merges a split dimension with a major one
/// (tokens [seq, batch] -> [seq * batch]): the rank's rows are then
/// strided, but every op that treats the rows alike computes on them
/// locally all the same. `outerAxes` split that major dimension too (the
/// dp-split batch merged with tp-split attention heads, [batch * heads]).
/// Invariant: outerAxes non-empty only with axes non-empty and outer > 1
/// (a split of the outer factor alone is the plain split over those axes).
struct DimSharding {
  MeshAxes axes;
  int64_t outer = 1;
  MeshAxes outerAxes;

  DimSharding() = default;
  DimSharding(MeshAxes axes, int64_t outer = 1, MeshAxes outerAxes = {})
      : axes(std::move(axes)), outer(outer), outerAxes(std::move(outerAxes)) {}
  bool empty() const { return axes.empty(); }
  void clear() {
    axes.clear();
    outer = 1;
    outerAxes.clear();
  }
  /// Every mesh axis splitting the dim, the outer factor's first.
  MeshAxes allAxes() const {
    MeshAxes all(outerAxes);
    all.append(axes.begin(), axes.end());
    return all;
  }
  bool operator==(const DimSharding &o) const {
    return axes == o.axes &&
           (axes.empty() || (outer == o.outer && outerAxes == o.outerAxes));
  }
  bool operator!=(const DimSharding &o) const { return !(*this == o); }
};

struct TensorSharding {
  /// Per dimension, the mesh axes that split it (empty: whole on each rank).
  llvm::SmallVector<DimSharding, 4> dims;
  /// Mesh axes over which the blocks are partial sums.
  MeshAxes partial;

  static TensorSharding replicated(int64_t rank);
  bool isReplicated() const;
  /// Every mesh axis the tensor is split or partial over.
  MeshAxes usedAxes() const;
  bool operator==(const TensorSharding &other) const {
    return dims == other.dims && partial == other.partial;
  }
  bool operator!=(const TensorSharding &other) const {
    return !(*this == other);
  }
  /// "[[0], []] partial [1]", for diagnostics.
  std::string str() const;
};

/// The device mesh of a partitioned module.
struct Mesh {
  std::string symbol; ///< the shard.grid's name
  llvm::SmallVector<int64_t, 3> shape;
  llvm::SmallVector<std::string, 3> names;

  int64_t numDevices() const;
  /// Ranks in a group over `axes` (the product of their sizes).
  int64_t groupSize(llvm::ArrayRef<MeshAxis> axes) const;
  /// "dp" (or "axis 2" without a name).
  std::string axisName(MeshAxis axis) const;
};

/// The block of `global` each rank holds under `sharding`; fails (with
/// `error` set) when a split dimension does not divide evenly.
mlir::FailureOr<mlir::RankedTensorType>
localType(mlir::RankedTensorType global, const TensorSharding &sharding,
          const Mesh &mesh, std::string &error);

/// The `weft.shard` dictionary of a sharding ({dims, outer, partial}), and back
/// (null / failure on a malformed attribute or one whose rank differs from
/// `rank`).
mlir::DictionaryAttr shardingToAttr(mlir::Builder &b,
                                    const TensorSharding &sharding);
mlir::FailureOr<TensorSharding> shardingFromAttr(mlir::Attribute attr,
                                                 int64_t rank);

/// The runtime's code for a shard reduction (KernelABI.h: 0 sum, 1 max,
/// 2 min, 3 avg); none for the kinds the collective kernels do not have.
std::optional<int64_t> runtimeReductionCode(mlir::shard::ReductionKind kind);

/// The module's mesh: its (single) shard.grid with `weft.mesh_axes`.
mlir::FailureOr<Mesh> getModuleMesh(mlir::ModuleOp module, std::string &error);

} // namespace weft

#endif // WEFT_DIALECTS_WEFT_SHARDING_H
