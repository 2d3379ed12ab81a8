//===- MergeProducts.cpp - One product for a sum of products --------------===//
//
// A weight used at every step of an unrolled recurrence gets one gradient
// product per step, and autodiff sums them:
//
//   dR = dg_1^T h_0 + dg_2^T h_1 + ... + dg_T^T h_{T-1}
//
// T products of a few rows each (the batch) and T - 1 sums of the whole
// weight's shape. The same sum is one product over the steps' rows
// stacked:
//
//   dR = concat(dg_1, ..., dg_T)^T concat(h_0, ..., h_{T-1})
//
// which a GEMM runs at full speed and in one launch. This pass rewrites a
// tree of weft.add whose leaves include two or more 2-D weft.matmul of the
// tree's type (same transposes and operand element types) that way: each
// product's operands are joined along their contracted dim, and the other
// leaves are added to the one product. It runs on the per-rank program,
// where every operand is this rank's and the sum is a local one.
//
// Only when it pays in memory traffic: the joined operands (K rows of M + N
// each) are copied once, where the sums read and write M x N per product.
// The result is the same sum, accumulated in another order.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace weft {
#define GEN_PASS_DEF_MERGEPRODUCTS
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// An add that continues `root`'s tree: one result type on both operands
/// and the result, read only by the tree, at the root's place in the step.
bool isTreeAdd(Operation *op, Operation *root, bool ignoreStage) {
  auto add = dyn_cast_or_null<AddOp>(op);
  return add && add.getType() == root->getResult(0).getType() &&
         add.getLhs().getType() == add.getType() &&
         add.getRhs().getType() == add.getType() &&
         samePlace(add, root, ignoreStage);
}

/// The leaves of the add tree under `root`, left to right.
void collectLeaves(AddOp root, Value v, bool ignoreStage,
                   SmallVectorImpl<Value> &leaves) {
  Operation *def = v.getDefiningOp();
  if (def && def != root.getOperation() && !def->hasOneUse()) {
    leaves.push_back(v);
    return;
  }
  if (def && isTreeAdd(def, root, ignoreStage)) {
    auto add = cast<AddOp>(def);
    collectLeaves(root, add.getLhs(), ignoreStage, leaves);
    collectLeaves(root, add.getRhs(), ignoreStage, leaves);
    return;
  }
  leaves.push_back(v);
}

/// The dims of a 2-D product's operands that it contracts.
int64_t lhsContracted(MatMulOp m) { return m.getTransposeA() ? 0 : 1; }
int64_t rhsContracted(MatMulOp m) { return m.getTransposeB() ? 1 : 0; }

/// A leaf that can join others: a 2-D product of the tree's type, read only
/// by the tree, at its place.
MatMulOp mergeableProduct(Value leaf, AddOp root, bool ignoreStage) {
  auto m = leaf.getDefiningOp<MatMulOp>();
  if (!m || !m->hasOneUse() || m.getType() != root.getType() ||
      !samePlace(m, root, ignoreStage))
    return {};
  auto lhs = cast<RankedTensorType>(m.getLhs().getType());
  auto rhs = cast<RankedTensorType>(m.getRhs().getType());
  if (lhs.getRank() != 2 || rhs.getRank() != 2 || !lhs.hasStaticShape() ||
      !rhs.hasStaticShape())
    return {};
  return m;
}

/// Products that one product can replace: same transposes and operand
/// element types.
bool sameKind(MatMulOp a, MatMulOp b) {
  return a.getTransposeA() == b.getTransposeA() &&
         a.getTransposeB() == b.getTransposeB() &&
         getElementTypeOrSelf(a.getLhs().getType()) ==
             getElementTypeOrSelf(b.getLhs().getType()) &&
         getElementTypeOrSelf(a.getRhs().getType()) ==
             getElementTypeOrSelf(b.getRhs().getType());
}

/// Joining the products' operands (K rows of M + N elements in all) moves
/// no more than twice what the sums they replace read and write (about
/// three M x N per product).
bool pays(ArrayRef<MatMulOp> group) {
  MatMulOp first = group.front();
  auto result = cast<RankedTensorType>(first.getType());
  const int64_t m = result.getDimSize(0), n = result.getDimSize(1);
  int64_t k = 0;
  for (MatMulOp p : group)
    k += cast<RankedTensorType>(p.getLhs().getType())
             .getDimSize(lhsContracted(p));
  return k * (m + n) <=
         2 * 3 * (static_cast<int64_t>(group.size()) - 1) * m * n;
}

/// Copies the attributes that place `from` in the step onto `to`.
void placeLike(Operation *to, Operation *from) {
  for (StringRef key : {"weft.stage", "weft.microbatch", "weft.chunk",
                        "weft.after_microbatches"})
    if (Attribute a = from->getDiscardableAttr(key))
      to->setDiscardableAttr(key, a);
}

Value concatAlong(PatternRewriter &rewriter, Location loc, ValueRange parts,
                  int64_t axis, Operation *place) {
  auto first = cast<RankedTensorType>(parts.front().getType());
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (Value p : parts)
    shape[axis] += cast<RankedTensorType>(p.getType()).getDimSize(axis);
  auto concat = ConcatOp::create(rewriter, loc, first.clone(shape), parts,
                                 rewriter.getI64IntegerAttr(axis));
  placeLike(concat, place);
  return concat;
}

struct MergeProductSum : OpRewritePattern<AddOp> {
  MergeProductSum(MLIRContext *context, bool ignoreStage)
      : OpRewritePattern(context), ignoreStage(ignoreStage) {}
  bool ignoreStage;

  LogicalResult matchAndRewrite(AddOp root,
                                PatternRewriter &rewriter) const override {
    if (!isTreeAdd(root, root, ignoreStage))
      return rewriter.notifyMatchFailure(root, "broadcasting add");
    // The whole tree at once, from its root.
    if (root->hasOneUse() &&
        isTreeAdd(*root->getUsers().begin(), root, ignoreStage))
      return rewriter.notifyMatchFailure(root, "not the root of its sum");
    SmallVector<Value> leaves;
    collectLeaves(root, root.getResult(), ignoreStage, leaves);
    // The first group of two or more products of one kind that pays.
    SmallVector<MatMulOp> group;
    for (Value leaf : leaves) {
      MatMulOp seed = mergeableProduct(leaf, root, ignoreStage);
      if (!seed)
        continue;
      group.clear();
      for (Value other : leaves)
        if (MatMulOp p = mergeableProduct(other, root, ignoreStage);
            p && sameKind(p, seed))
          group.push_back(p);
      if (group.size() >= 2 && group.front() == seed && pays(group))
        break;
      group.clear();
    }
    if (group.empty())
      return rewriter.notifyMatchFailure(root, "no products to merge");

    Location loc = root.getLoc();
    rewriter.setInsertionPoint(root);
    SmallVector<Value> lhs, rhs;
    for (MatMulOp p : group) {
      lhs.push_back(p.getLhs());
      rhs.push_back(p.getRhs());
    }
    MatMulOp first = group.front();
    Value joinedLhs =
        concatAlong(rewriter, loc, lhs, lhsContracted(first), root);
    Value joinedRhs =
        concatAlong(rewriter, loc, rhs, rhsContracted(first), root);
    auto product =
        MatMulOp::create(rewriter, loc, root.getType(), joinedLhs, joinedRhs,
                         first.getTransposeAAttr(), first.getTransposeBAttr());
    placeLike(product, root);
    Value sum = product;
    for (Value leaf : leaves) {
      if (llvm::is_contained(group, leaf.getDefiningOp<MatMulOp>()))
        continue;
      auto add = AddOp::create(rewriter, loc, root.getType(), sum, leaf);
      placeLike(add, root);
      sum = add;
    }
    rewriter.replaceOp(root, sum);
    return success();
  }
};

struct MergeProductsPass
    : public weft::impl::MergeProductsBase<MergeProductsPass> {
  using MergeProductsBase::MergeProductsBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<MergeProductSum>(&getContext(), ignoreStage);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
