//===- GradientRulesDataMovement.cpp - Gradients of data movement ops -----===//
//
// GradientOpInterface of reshape, transpose, concat, split, slice, gather,
// broadcast_to and trilu. Each moves the gradient back the way the data
// came: the inverse view or permutation, the pieces, the scattered sums.
// Indices get no gradient.
//
//===----------------------------------------------------------------------===//
#include "dialects/weft/GradientRules.h"

using namespace mlir;
using namespace weft;
using namespace weft::gradient;

LogicalResult ReshapeOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads))
    operandGrads[0] = reshape(b, getLoc(), g, getInput().getType().getShape());
  return success();
}

// The inverse permutation: inverse[permutation[i]] = i.
LogicalResult
TransposeOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Value g = singleResultGrad(*this, resultGrads, operandGrads);
  if (!g)
    return success();
  ArrayRef<int64_t> permutation = getPermutation();
  SmallVector<int64_t> inverse(permutation.size(), 0);
  for (auto [i, p] : llvm::enumerate(permutation)) {
    if (p < 0 || p >= static_cast<int64_t>(permutation.size()))
      return emitOpError("permutation is not valid");
    inverse[p] = i;
  }
  operandGrads[0] = TransposeOp::create(b, getLoc(), getInput().getType(), g,
                                        b.getDenseI64ArrayAttr(inverse));
  return success();
}

// The gradient cut into the inputs' pieces.
LogicalResult ConcatOp::buildGradients(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Value g = singleResultGrad(*this, resultGrads, operandGrads);
  if (!g)
    return success();
  if (getInputs().size() == 1) {
    operandGrads[0] = g;
    return success();
  }
  auto pieces =
      SplitOp::create(b, getLoc(), getInputs().getTypes(), g, getAxisAttr());
  for (auto [i, piece] : llvm::enumerate(pieces.getResults()))
    operandGrads[i] = piece;
  return success();
}

// The pieces' gradients joined, zeros for pieces that got none.
LogicalResult SplitOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(1, Value());
  Type inputType = getInput().getType();
  if (!isFloatTensor(inputType) || resultGrads.size() != getNumResults() ||
      llvm::all_of(resultGrads, [](Value g) { return !g; }))
    return success();
  Location loc = getLoc();
  SmallVector<Value> pieces;
  for (auto [result, g] : llvm::zip(getResults(), resultGrads))
    pieces.push_back(gradOrZeros(b, loc, g, result.getType()));
  operandGrads[0] =
      pieces.size() == 1
          ? pieces[0]
          : Value(ConcatOp::create(b, loc, inputType, pieces, getAxisAttr()));
  return success();
}

LogicalResult SliceOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value g = singleResultGrad(*this, resultGrads, operandGrads);
  if (!g)
    return success();
  if (getType() == getInput().getType() &&
      llvm::all_of(getSteps(), [](int64_t s) { return s == 1; })) {
    operandGrads[0] = g; // The whole input, in order.
    return success();
  }
  operandGrads[0] = SliceGradOp::create(b, getLoc(), getInput().getType(), g,
                                        getStartsAttr(), getStepsAttr());
  return success();
}

// Embedding lookups and other gathers: the rows' gradients summed into the
// rows they came from (repeated indices accumulate).
LogicalResult GatherOp::buildGradients(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads))
    operandGrads[0] = ScatterAddOp::create(b, getLoc(), getData().getType(),
                                           getIndices(), g, getAxisAttr());
  return success();
}

// TopK: each value's gradient goes back to the input element it came from.
// The positions are flattened (a constant offset per result element for
// the dims other than the axis, plus index * the axis' stride) so that one
// weft.scatter_add over the flattened input places them; the indices of a
// row are distinct, so nothing sums. scatter_add is f32: other float types
// go through casts.
LogicalResult TopKOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(1, Value());
  auto inputType = getInput().getType();
  Value g = resultGrads.empty() ? Value() : resultGrads[0];
  if (!g || !isFloatTensor(inputType))
    return success();
  Location loc = getLoc();
  ArrayRef<int64_t> inShape = inputType.getShape();
  auto resultType = cast<RankedTensorType>(getValues().getType());
  const int64_t rank = inputType.getRank(), axis = getAxis();
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * inShape[d + 1];
  const int64_t count = resultType.getNumElements();
  SmallVector<int64_t> base(count, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i;
    for (int64_t d = rank - 1; d >= 0; --d) {
      const int64_t c = rest % resultType.getDimSize(d);
      rest /= resultType.getDimSize(d);
      if (d != axis)
        base[i] += c * strides[d];
    }
  }
  auto indexType = cast<RankedTensorType>(getIndices().getType());
  Value offsets = ConstantOp::create(
      b, loc, indexType,
      DenseElementsAttr::get(indexType, ArrayRef<int64_t>(base)));
  Value along =
      mul(b, loc, getIndices(),
          scalar(b, loc, b.getI64Type(), static_cast<double>(strides[axis])));
  Value flat = reshape(b, loc, add(b, loc, offsets, along), {count});
  Type f32 = b.getF32Type(), element = inputType.getElementType();
  Value updates =
      reshape(b, loc, element == f32 ? g : castTo(b, loc, g, f32), {count});
  Value scattered = ScatterAddOp::create(
      b, loc, RankedTensorType::get({inputType.getNumElements()}, f32), flat,
      updates, b.getI64IntegerAttr(0));
  Value grad = reshape(b, loc, scattered, inShape);
  operandGrads[0] = element == f32 ? grad : castTo(b, loc, grad, element);
  return success();
}

LogicalResult
BroadcastToOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads))
    operandGrads[0] = sumToShape(b, getLoc(), g, getInput().getType());
  return success();
}

// The kept triangle's gradient: the same mask applied to g.
LogicalResult TriluOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads))
    operandGrads[0] =
        TriluOp::create(b, getLoc(), getType(), g, getUpperAttr(), getKAttr());
  return success();
}
