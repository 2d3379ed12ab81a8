//===- VocabParallel.cpp - Lookups into data split along the looked-up dim ===//
#include "passes/VocabParallel.h"

#include "dialects/weft/GradientRules.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;
using namespace weft;
using namespace weft::vocab;

namespace g = weft::gradient;

namespace {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// `v` with unit dims inserted so that its dims line up with `at` onward
/// in a tensor of rank `rank`.
Value alignDims(OpBuilder &b, Location loc, Value v, int64_t at, int64_t rank) {
  auto t = tensorType(v);
  SmallVector<int64_t> shape(at, 1);
  shape.append(t.getShape().begin(), t.getShape().end());
  shape.resize(rank, 1);
  return g::reshape(b, loc, v, shape);
}

} // namespace

Value vocab::Builder::intScalar(Location loc, Type elementType, int64_t value) {
  auto type = RankedTensorType::get({}, elementType);
  return ConstantOp::create(b, loc,
                            cast<ElementsAttr>(DenseElementsAttr::get(
                                type, b.getIntegerAttr(elementType, value))));
}

Value vocab::Builder::allReduce(Location loc, Value v,
                                shard::ReductionKind kind) {
  return shard::AllReduceOp::create(b, loc, v.getType(), mesh.symbol, axes, v,
                                    kind);
}

Value vocab::Builder::offset(Location loc, int64_t block, Type elementType) {
  auto i64 = RankedTensorType::get({}, b.getI64Type());
  Value start = MeshOffsetOp::create(
      b, loc, i64, FlatSymbolRefAttr::get(b.getContext(), mesh.symbol),
      b.getDenseI16ArrayAttr(axes), b.getI64IntegerAttr(block));
  if (elementType != b.getI64Type())
    start = CastOp::create(b, loc, i64.clone(elementType), start);
  return start;
}

LocalIndices vocab::Builder::localIndices(Location loc, Value indices,
                                          int64_t extent, int64_t block) {
  Type elementType = tensorType(indices).getElementType();
  Value zero = intScalar(loc, elementType, 0);
  Value negative = LessOp::create(b, loc, indices, zero);
  Value wrapped = g::add(b, loc, indices, intScalar(loc, elementType, extent));
  Value global = WhereOp::create(b, loc, negative, wrapped, indices);
  Value local = g::sub(b, loc, global, offset(loc, block, elementType));
  Value above = GreaterEqualOp::create(b, loc, local, zero);
  Value below =
      LessOp::create(b, loc, local, intScalar(loc, elementType, block));
  Value inRange = AndOp::create(b, loc, above, below);
  return {WhereOp::create(b, loc, inRange, local, zero), inRange};
}

Value vocab::Builder::gather(Location loc, Value data,
                             const LocalIndices &indices, int64_t axis,
                             RankedTensorType resultType) {
  Value looked = GatherOp::create(b, loc, resultType, data, indices.safe,
                                  b.getI64IntegerAttr(axis));
  Value mask = alignDims(b, loc, indices.inRange, axis, resultType.getRank());
  return WhereOp::create(b, loc, resultType, mask, looked,
                         g::scalarLike(b, loc, looked, 0.0));
}

Value vocab::Builder::scatterAdd(Location loc, const LocalIndices &indices,
                                 Value updates, int64_t axis,
                                 RankedTensorType resultType) {
  auto ut = tensorType(updates);
  Value mask = alignDims(b, loc, indices.inRange, axis, ut.getRank());
  Value kept = WhereOp::create(b, loc, ut, mask, updates,
                               g::scalarLike(b, loc, updates, 0.0));
  return ScatterAddOp::create(b, loc, resultType, indices.safe, kept,
                              b.getI64IntegerAttr(axis));
}

Value vocab::Builder::logSumExp(Location loc, Value scores) {
  auto classes = b.getDenseI64ArrayAttr({1});
  Value localMax =
      ReduceMaxOp::create(b, loc, scores, classes, b.getBoolAttr(true));
  Value max = allReduce(loc, localMax, shard::ReductionKind::Max);
  Value shifted = g::sub(b, loc, scores, max);
  Value exps = ExpOp::create(b, loc, shifted.getType(), shifted);
  Value sum = allReduce(loc, g::reduceSum(b, loc, exps, {1}, true),
                        shard::ReductionKind::Sum);
  return g::add(b, loc, LogOp::create(b, loc, sum.getType(), sum), max);
}

Value vocab::Builder::labelMask(Location loc, Value scores, Value labels) {
  auto st = tensorType(scores);
  Type elementType = tensorType(labels).getElementType();
  int64_t block = st.getDimSize(1);
  // Labels as [N, 1, d...] against this block's classes as [1, C/g, 1...].
  SmallVector<int64_t> rowShape(st.getShape());
  rowShape[1] = 1;
  Value rows = g::reshape(b, loc, labels, rowShape);
  SmallVector<APInt> ids;
  unsigned width = elementType.getIntOrFloatBitWidth();
  for (int64_t c = 0; c < block; ++c)
    ids.push_back(APInt(width, c));
  SmallVector<int64_t> classShape(st.getRank(), 1);
  classShape[1] = block;
  auto classType = RankedTensorType::get(classShape, elementType);
  Value classIds = ConstantOp::create(
      b, loc, cast<ElementsAttr>(DenseElementsAttr::get(classType, ids)));
  Value global = g::add(b, loc, classIds, offset(loc, block, elementType));
  return EqualOp::create(b, loc, global, rows);
}

Value vocab::Builder::labelScores(Location loc, Value scores, Value mask) {
  Value picked = WhereOp::create(b, loc, scores.getType(), mask, scores,
                                 g::scalarLike(b, loc, scores, 0.0));
  return allReduce(loc, g::reduceSum(b, loc, picked, {1}, true),
                   shard::ReductionKind::Sum);
}
