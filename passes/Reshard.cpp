//===- Reshard.cpp - The collectives that move one dim's split ------------===//
#include "passes/Reshard.h"

#include "dialects/weft/GradientRules.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;
using namespace weft;

namespace {

/// `v` with dim `dim` seen as [outer, dim / outer].
Value viewOuter(OpBuilder &b, Location loc, Value v, int64_t dim,
                int64_t outer) {
  SmallVector<int64_t> view(cast<RankedTensorType>(v.getType()).getShape());
  view[dim] /= outer;
  view.insert(view.begin() + dim, outer);
  return gradient::reshape(b, loc, v, view);
}

Value sliceAt(OpBuilder &b, const Mesh &mesh, Location loc, Value v, int64_t at,
              const MeshAxes &axes) {
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> cut(t.getShape());
  cut[at] /= mesh.groupSize(axes);
  return shard::AllSliceOp::create(b, loc, t.clone(cut), v, mesh.symbol, axes,
                                   at);
}

Value gatherAt(OpBuilder &b, const Mesh &mesh, Location loc, Value v,
               int64_t at, const MeshAxes &axes) {
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> joined(t.getShape());
  joined[at] *= mesh.groupSize(axes);
  return shard::AllGatherOp::create(b, loc, t.clone(joined), mesh.symbol, axes,
                                    v, APInt(64, at));
}

} // namespace

/// The inverse of gatherDim. With outer > 1 the blocks interleave: the
/// slice is taken on the rest of [outer, rest], and a split outer
/// (outerAxes) is sliced on the outer part.
Value weft::sliceDim(OpBuilder &b, const Mesh &mesh, Value whole, int64_t dim,
                     const DimSharding &split, Location loc) {
  if (split.outer == 1 && split.outerAxes.empty())
    return sliceAt(b, mesh, loc, whole, dim, split.axes);
  SmallVector<int64_t> shape(
      cast<RankedTensorType>(whole.getType()).getShape());
  Value v = viewOuter(b, loc, whole, dim, split.outer);
  v = sliceAt(b, mesh, loc, v, dim + 1, split.axes);
  if (!split.outerAxes.empty())
    v = sliceAt(b, mesh, loc, v, dim, split.outerAxes);
  shape[dim] /= mesh.groupSize(split.allAxes());
  return gradient::reshape(b, loc, v, shape);
}

/// With outer > 1 the blocks interleave: the gather runs on the rest of
/// [outer, rest], and a split outer (outerAxes) is gathered on the outer
/// part.
Value weft::gatherDim(OpBuilder &b, const Mesh &mesh, Value local, int64_t dim,
                      const DimSharding &split, Location loc) {
  SmallVector<int64_t> shape(
      cast<RankedTensorType>(local.getType()).getShape());
  int64_t axis = dim;
  if (split.outer != 1) {
    local = viewOuter(b, loc, local, dim,
                      split.outer / mesh.groupSize(split.outerAxes));
    axis = dim + 1;
  }
  Value v = gatherAt(b, mesh, loc, local, axis, split.axes);
  if (!split.outerAxes.empty())
    v = gatherAt(b, mesh, loc, v, dim, split.outerAxes);
  shape[dim] *= mesh.groupSize(split.allAxes());
  return gradient::reshape(b, loc, v, shape);
}

Value weft::gatherDimPart(OpBuilder &b, const Mesh &mesh, Value local,
                          int64_t dim, int64_t localOuter, bool outerPart,
                          const MeshAxes &axes, Location loc) {
  SmallVector<int64_t> shape(
      cast<RankedTensorType>(local.getType()).getShape());
  Value v = viewOuter(b, loc, local, dim, localOuter);
  v = gatherAt(b, mesh, loc, v, outerPart ? dim : dim + 1, axes);
  shape[dim] *= mesh.groupSize(axes);
  return gradient::reshape(b, loc, v, shape);
}
