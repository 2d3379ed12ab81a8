//===- FoldCasts.cpp - Casts that the neighbouring kernel does itself -----===//
//
// Mixed precision leaves casts whose only work is to change the element
// type between an op and its one neighbour. Two of them the neighbour's
// kernel can do on its own, bit for bit:
//
//   cast_bf16(layer_norm(x))   ->  layer_norm(x) : bf16
//   reduce_sum(cast_f32(y))    ->  reduce_sum(y) : bf16 -> f32
//
// (the layer norm normalizes in f32 and rounds each value once, as the
// cast did; the sum widens each element as it reads it and accumulates in
// f32, as it did after the cast). The ops then carry the other type, so
// the lowering launches no cast and the cost model counts none, without
// either of them knowing about the fold.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

namespace weft {
#define GEN_PASS_DEF_FOLDCASTS
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

Type elementOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

/// An f32 layer norm whose one reader is a cast to bf16 or f16 at the same
/// place in the step takes the cast's type, and the cast goes.
void narrowNormResult(CastOp cast, bool ignoreStage) {
  auto norm = cast.getInput().getDefiningOp<LayerNormOp>();
  Type to = elementOf(cast.getResult());
  if (!norm || !norm->hasOneUse() || norm->getBlock() != cast->getBlock() ||
      !elementOf(norm.getResult()).isF32() || !(to.isBF16() || to.isF16()) ||
      !samePlace(norm, cast, ignoreStage))
    return;
  norm.getResult().setType(cast.getType());
  cast.getResult().replaceAllUsesWith(norm.getResult());
  cast.erase();
}

/// A widening of bf16 to f32 whose one reader is a reduce_sum at the same
/// place in the step: the sum reads the bf16 tensor, and the cast goes.
void widenReduceInput(CastOp cast, bool ignoreStage) {
  if (!elementOf(cast.getInput()).isBF16() ||
      !elementOf(cast.getResult()).isF32() || !cast->hasOneUse())
    return;
  auto sum = dyn_cast<ReduceSumOp>(*cast->getUsers().begin());
  if (!sum || sum->getBlock() != cast->getBlock() ||
      !samePlace(cast, sum, ignoreStage))
    return;
  sum->setOperand(0, cast.getInput());
  cast.erase();
}

struct FoldCastsPass : public weft::impl::FoldCastsBase<FoldCastsPass> {
  using FoldCastsBase::FoldCastsBase;
  void runOnOperation() override {
    SmallVector<CastOp> casts;
    getOperation().walk([&](CastOp cast) { casts.push_back(cast); });
    for (CastOp cast : casts) {
      if (foldNormCasts &&
          isa_and_nonnull<LayerNormOp>(cast.getInput().getDefiningOp()))
        narrowNormResult(cast, ignoreStage);
      else
        widenReduceInput(cast, ignoreStage);
    }
  }
};

} // namespace
