//===- DropoutPositions.cpp - A dropout's block of the whole tensor ------===//
//
// See DropoutPositions.h.
//
//===----------------------------------------------------------------------===//
#include "passes/DropoutPositions.h"

#include "dialects/weft/GradientRules.h"

using namespace mlir;
using namespace weft;

/// A dropout or a weft.random draws from its elements' positions in the
/// whole tensor: its offsets move to where this rank's block starts, dim by
/// dim (a weft.mesh_offset per split dim), so every plan draws the
/// single-device numbers. A dim split in strided blocks (heads merged with
/// the batch, say) is viewed as [outer, rest], whose two parts are split in
/// plain blocks: the op runs on that view (same row-major positions) between
/// reshapes. Both ops take (input or like, step, offsets) and carry
/// `global_shape`. Returns the local results.
FailureOr<SmallVector<Value>> weft::localizeDraws(OpBuilder &b,
                                                  const Mesh &mesh,
                                                  Operation *draws,
                                                  const TensorSharding &split) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(draws);
  Location loc = draws->getLoc();
  auto local = cast<RankedTensorType>(draws->getOperand(0).getType());
  ArrayRef<int64_t> global =
      draws->getAttrOfType<DenseI64ArrayAttr>("global_shape").asArrayRef();
  SmallVector<int64_t> viewLocal, viewGlobal;
  // Per view dim: the mesh axes its blocks are split over (none: whole).
  SmallVector<MeshAxes> viewAxes;
  bool strided = false;
  for (auto [d, dim] : llvm::enumerate(split.dims)) {
    int64_t extent = local.getDimSize(d), whole = global[d];
    if (dim.empty() || (dim.outer == 1 && dim.outerAxes.empty())) {
      viewLocal.push_back(extent);
      viewGlobal.push_back(whole);
      viewAxes.push_back(dim.axes);
      continue;
    }
    strided = true;
    int64_t outerLocal = dim.outer / mesh.groupSize(dim.outerAxes);
    viewLocal.append({outerLocal, extent / outerLocal});
    viewGlobal.append({dim.outer, whole / dim.outer});
    viewAxes.push_back(dim.outerAxes);
    viewAxes.push_back(dim.axes);
  }
  auto i64 = RankedTensorType::get({}, b.getI64Type());
  auto offsetsType =
      RankedTensorType::get({int64_t(viewLocal.size())}, b.getI64Type());
  Value offsets =
      strided
          ? Value(ConstantOp::create(
                b, loc,
                DenseElementsAttr::get(offsetsType, b.getI64IntegerAttr(0))))
          : draws->getOperand(2);
  for (auto [d, axes] : llvm::enumerate(viewAxes)) {
    if (axes.empty())
      continue;
    auto start = MeshOffsetOp::create(
        b, loc, i64, FlatSymbolRefAttr::get(b.getContext(), mesh.symbol),
        b.getDenseI16ArrayAttr(axes), b.getI64IntegerAttr(viewLocal[d]));
    // Only a position: over microbatches it is each microbatch's own
    // (weft-microbatch), unlike the block of a gather's data, which all
    // microbatches would have to share.
    start->setAttr("weft.position", b.getUnitAttr());
    SmallVector<int64_t> unit(viewLocal.size(), 0);
    unit[d] = 1;
    Value along = ConstantOp::create(
        b, loc, DenseElementsAttr::get(offsetsType, ArrayRef<int64_t>(unit)));
    offsets = AddOp::create(b, loc, offsetsType, offsets,
                            MulOp::create(b, loc, offsetsType, along, start));
  }
  if (!strided) {
    draws->setOperand(2, offsets);
    return SmallVector<Value>(draws->getResults());
  }
  OperationState state(loc, draws->getName());
  state.addOperands({gradient::reshape(b, loc, draws->getOperand(0), viewLocal),
                     draws->getOperand(1), offsets});
  for (Type type : draws->getResultTypes())
    state.addTypes(cast<RankedTensorType>(type).clone(viewLocal));
  state.addAttributes(draws->getAttrs());
  Operation *view = b.create(state);
  view->setAttr("global_shape", b.getDenseI64ArrayAttr(viewGlobal));
  SmallVector<Value> results;
  for (Value result : view->getResults())
    results.push_back(gradient::reshape(b, loc, result, local.getShape()));
  draws->erase();
  return results;
}
