//===- MergeSliceGrads.cpp - One slice gradient for adjacent blocks -------===//
//
// Autodiff differentiates the q, k and v slices of one packed projection
// into three slice gradients, each writing the whole projection's shape
// (zeros outside its block), and sums them: three full writes and two full
// sums where one concat of the three blocks would do. This pass rewrites
//
//   add(slice_grad(a), slice_grad(b))  ->  slice_grad(concat(a, b))
//
// for blocks adjacent along one dim, flattens the nested concats this
// leaves, and folds a slice gradient that covers its whole input. It runs
// on the per-rank program, after partitioning: tensor parallelism finds
// the strided q, k, v blocks of a packed weight through the slice
// gradients, which a concat would hide.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace weft {
#define GEN_PASS_DEF_MERGESLICEGRADS
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {
/// The sum of two slice gradients that place adjacent blocks along one dim
/// (the gradients of q, k and v sliced from one projection, say) is one
/// slice gradient of their concat: one write of the zeros and no sum. Both
/// slices take every element (steps of 1) and agree on every other dim.
/// Once the blocks cover the whole input, the slice gradient folds away.
struct MergeAdjacentSliceGrads : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    auto a = op.getLhs().getDefiningOp<SliceGradOp>();
    auto b = op.getRhs().getDefiningOp<SliceGradOp>();
    if (!a || !b || a.getType() != op.getType() ||
        b.getType() != op.getType() || !a->hasOneUse() || !b->hasOneUse())
      return rewriter.notifyMatchFailure(op, "not two slice gradients");
    auto unitSteps = [](SliceGradOp s) {
      return llvm::all_of(s.getSteps(), [](int64_t step) { return step == 1; });
    };
    auto ta = cast<RankedTensorType>(a.getGrad().getType());
    auto tb = cast<RankedTensorType>(b.getGrad().getType());
    if (!unitSteps(a) || !unitSteps(b) ||
        ta.getElementType() != tb.getElementType() ||
        ta.getRank() != tb.getRank() || !ta.hasStaticShape() ||
        !tb.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "strided or mismatched slices");
    ArrayRef<int64_t> sa = a.getStarts(), sb = b.getStarts();
    // The one dim where the blocks differ; everywhere else they coincide.
    int64_t axis = -1;
    for (int64_t d = 0; d < ta.getRank(); ++d) {
      if (sa[d] == sb[d] && ta.getDimSize(d) == tb.getDimSize(d))
        continue;
      if (axis >= 0)
        return rewriter.notifyMatchFailure(op, "blocks differ in two dims");
      axis = d;
    }
    if (axis < 0)
      return rewriter.notifyMatchFailure(op, "the same block twice");
    SliceGradOp first = a, second = b;
    if (sb[axis] < sa[axis])
      std::swap(first, second);
    auto firstType = cast<RankedTensorType>(first.getGrad().getType());
    if (first.getStarts()[axis] + firstType.getDimSize(axis) !=
        second.getStarts()[axis])
      return rewriter.notifyMatchFailure(op, "blocks are not adjacent");
    SmallVector<int64_t> shape(firstType.getShape());
    shape[axis] +=
        cast<RankedTensorType>(second.getGrad().getType()).getDimSize(axis);
    Value joined =
        ConcatOp::create(rewriter, op.getLoc(), firstType.clone(shape),
                         ValueRange{first.getGrad(), second.getGrad()},
                         rewriter.getI64IntegerAttr(axis));
    rewriter.replaceOpWithNewOp<SliceGradOp>(
        op, op.getType(), joined, first.getStartsAttr(), first.getStepsAttr());
    return success();
  }
};

/// A concat's operand that is itself a concat along the same axis, read by
/// nothing else, contributes its operands directly: one copy instead of two.
struct FlattenNestedConcat : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<Value> inputs;
    bool changed = false;
    for (Value v : op.getInputs()) {
      auto inner = v.getDefiningOp<ConcatOp>();
      if (inner && inner.getAxis() == op.getAxis() && inner->hasOneUse()) {
        llvm::append_range(inputs, inner.getInputs());
        changed = true;
      } else {
        inputs.push_back(v);
      }
    }
    if (!changed)
      return rewriter.notifyMatchFailure(op, "no nested concat");
    rewriter.replaceOpWithNewOp<ConcatOp>(op, op.getType(), inputs,
                                          op.getAxisAttr());
    return success();
  }
};

struct MergeSliceGradsPass
    : public weft::impl::MergeSliceGradsBase<MergeSliceGradsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<MergeAdjacentSliceGrads, FlattenNestedConcat>(&getContext());
    // The greedy driver folds as it goes: slice_grad's folder drops one
    // that covers its whole input.
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
