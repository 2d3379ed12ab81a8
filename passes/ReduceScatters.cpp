//===- ReduceScatters.cpp - Sums cut after they are complete --------------===//
//
// The partitioner completes a partial sum where a user needs it whole (an
// all_reduce) and cuts a block out of a whole value where a user wants it
// split (an all_slice, no communication). When the only path from the one
// to the other goes through ops that commute with the cut (elementwise ops,
// reshapes, transposes), each rank needs only its block of the sum: the cut
// moves up to the all_reduce, which becomes a reduce_scatter (half its
// bytes), and the ops in between work on blocks. This is the row-parallel
// product under sequence parallelism: its partial output, a bias added, the
// [rows] -> [seq, batch] reshape, then a cut along the sequence.
//
//===----------------------------------------------------------------------===//
#include "passes/ReduceScatters.h"

#include "dialects/weft/WeftOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace {

/// One op between the all_reduce and the all_slice: its operand on the
/// path, and the dims cut (of that operand and of its result).
struct Step {
  Operation *op;
  unsigned operand;
  int64_t operandDim, resultDim;
};

/// The dim of a reshape's input whose cut into `parts` blocks is the cut
/// of its result's dim `d`: the one with as many elements before it (the
/// blocks are then the same runs of the flat index).
std::optional<int64_t> reshapeInputDim(ArrayRef<int64_t> in,
                                       ArrayRef<int64_t> out, int64_t d,
                                       int64_t parts) {
  int64_t before = 1;
  for (int64_t k = 0; k < d; ++k)
    before *= out[k];
  int64_t prefix = 1;
  for (auto [e, size] : llvm::enumerate(in)) {
    if (prefix == before && size % parts == 0)
      return static_cast<int64_t>(e);
    prefix *= size;
    if (prefix > before)
      break;
  }
  return std::nullopt;
}

RankedTensorType cut(Type t, int64_t dim, int64_t parts) {
  auto type = cast<RankedTensorType>(t);
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] /= parts;
  return type.clone(shape);
}

/// The path from `slice` up to an all_reduce over the same axes, each value
/// on it used once; empty when there is none.
FailureOr<std::pair<shard::AllReduceOp, SmallVector<Step>>>
pathToSum(shard::AllSliceOp slice, int64_t parts) {
  SmallVector<Step> steps;
  Value cur = slice.getInput();
  int64_t dim = slice.getSliceAxis().getSExtValue();
  while (true) {
    Operation *def = cur.getDefiningOp();
    if (!def || !cur.hasOneUse())
      return failure();
    if (auto sum = dyn_cast<shard::AllReduceOp>(def)) {
      if (sum.getReduction() != shard::ReductionKind::Sum ||
          sum.getGrid() != slice.getGrid() ||
          sum.getGridAxes() != slice.getGridAxes())
        return failure();
      return std::make_pair(sum, steps);
    }
    auto resultType = cast<RankedTensorType>(cur.getType());
    if (auto t = dyn_cast<weft::TransposeOp>(def)) {
      int64_t from = t.getPermutation()[dim];
      steps.push_back({def, 0, from, dim});
      dim = from;
    } else if (auto r = dyn_cast<weft::ReshapeOp>(def)) {
      std::optional<int64_t> from = reshapeInputDim(
          r.getInput().getType().getShape(), resultType.getShape(), dim, parts);
      if (!from)
        return failure();
      steps.push_back({def, 0, *from, dim});
      dim = *from;
    } else if (isa<weft::AddOp, weft::SubOp, weft::MulOp, weft::DivOp>(def)) {
      // The path continues through an operand of the result's shape; the
      // other is cut alike (or kept, where it broadcasts along the dim).
      std::optional<unsigned> on;
      for (unsigned i = 0; i < 2; ++i) {
        Value operand = def->getOperand(i);
        if (operand.getType() == resultType && operand.hasOneUse() &&
            operand.getDefiningOp() &&
            isa<shard::AllReduceOp, weft::TransposeOp, weft::ReshapeOp,
                weft::AddOp, weft::SubOp, weft::MulOp, weft::DivOp>(
                operand.getDefiningOp()))
          on = on ? std::optional<unsigned>() : std::optional<unsigned>(i);
      }
      if (!on)
        return failure();
      steps.push_back({def, *on, dim, dim});
    } else {
      return failure();
    }
    cur = steps.back().op->getOperand(steps.back().operand);
  }
}

bool hoist(shard::AllSliceOp slice) {
  auto inType = cast<RankedTensorType>(slice.getInput().getType());
  int64_t sliceDim = slice.getSliceAxis().getSExtValue();
  int64_t parts =
      inType.getDimSize(sliceDim) / slice.getType().getDimSize(sliceDim);
  auto path = pathToSum(slice, parts);
  if (failed(path))
    return false;
  auto [sum, steps] = *path;
  int64_t topDim = steps.empty() ? sliceDim : steps.back().operandDim;
  OpBuilder b(sum);
  MLIRContext *ctx = slice.getContext();
  Value v = shard::ReduceScatterOp::create(
      b, sum.getLoc(), cut(sum.getType(), topDim, parts), sum.getGridAttr(),
      sum.getGridAxesAttr(), sum.getInput(),
      shard::ReductionKindAttr::get(ctx, shard::ReductionKind::Sum),
      b.getIndexAttr(topDim));
  v.getDefiningOp()->setDiscardableAttrs(sum->getDiscardableAttrDictionary());
  for (const Step &step : llvm::reverse(steps)) {
    b.setInsertionPoint(step.op);
    IRMapping mapping;
    mapping.map(step.op->getOperand(step.operand), v);
    auto resultType = cast<RankedTensorType>(step.op->getResult(0).getType());
    for (auto [i, operand] : llvm::enumerate(step.op->getOperands())) {
      if (i == step.operand)
        continue;
      // An elementwise op's other operand, broadcast from the right.
      auto t = cast<RankedTensorType>(operand.getType());
      int64_t od = step.resultDim - (resultType.getRank() - t.getRank());
      if (od < 0 || t.getDimSize(od) == 1)
        continue;
      auto part = shard::AllSliceOp::create(
          b, slice.getLoc(), cut(t, od, parts), slice.getGridAttr(),
          slice.getGridAxesAttr(), operand, b.getIndexAttr(od));
      part->setDiscardableAttrs(slice->getDiscardableAttrDictionary());
      mapping.map(operand, part.getResult());
    }
    Operation *clone = b.clone(*step.op, mapping);
    clone->getResult(0).setType(cut(resultType, step.resultDim, parts));
    v = clone->getResult(0);
  }
  slice.getResult().replaceAllUsesWith(v);
  slice.erase();
  for (const Step &step : steps)
    step.op->erase();
  sum.erase();
  return true;
}

} // namespace

int weft::formReduceScatters(func::FuncOp func) {
  SmallVector<shard::AllSliceOp> slices;
  func.walk([&](shard::AllSliceOp s) { slices.push_back(s); });
  int formed = 0;
  for (shard::AllSliceOp slice : slices)
    formed += hoist(slice);
  return formed;
}
