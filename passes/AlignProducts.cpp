//===- AlignProducts.cpp - Pad a product's odd output dimension -----------===//
//
// A GPU GEMM reads and writes rows with 16-byte vector accesses only when
// every row starts 16-byte aligned: a leading dimension that is a multiple
// of 8 for bf16. An LM head's vocabulary (GPT-2's 50257) is not, and its
// three products (forward, input and weight gradients) then run on slow
// kernels. Padding the weight's output dimension with zero columns makes
// all three aligned; a slice takes the real columns back. The zero columns
// add exact zeros to nothing the model reads, and autodiff turns the pad
// into a split and the slice into a zero-padded gradient, so the step
// computes the same values.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace weft {
#define GEN_PASS_DEF_ALIGNPRODUCTS
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct AlignProductsPass
    : public weft::impl::AlignProductsBase<AlignProductsPass> {
  using AlignProductsBase::AlignProductsBase;

  void runOnOperation() override {
    if (multiple < 2 || minDim < 1) {
      getOperation().emitError("weft-align-products needs multiple >= 2 and "
                               "min-dim >= 1, got multiple=")
          << static_cast<int64_t>(multiple)
          << " min-dim=" << static_cast<int64_t>(minDim);
      return signalPassFailure();
    }
    SmallVector<MatMulOp> products;
    getOperation().walk([&](MatMulOp mm) { products.push_back(mm); });
    for (MatMulOp mm : products)
      align(mm);
    SmallVector<SoftmaxCrossEntropyOp> losses;
    getOperation().walk(
        [&](SoftmaxCrossEntropyOp op) { losses.push_back(op); });
    for (SoftmaxCrossEntropyOp op : losses)
      readLogitsDirectly(op);
  }

  /// A cross-entropy over [slice of the real classes of] [the widening to
  /// f32 of] the logits, reshaped to [rows, classes], reads the (padded,
  /// 16-bit) logits itself: the `classes` attribute leaves the padding out,
  /// and the kernel widens as it reads. The slice, its zero-padded gradient
  /// and both casts then disappear; the values are the same (a widening is
  /// exact, and the gradient is rounded once either way).
  void readLogitsDirectly(SoftmaxCrossEntropyOp op) {
    Value scores = op.getScores();
    auto scoresType = cast<RankedTensorType>(scores.getType());
    if (scoresType.getRank() != 2 || op.getClasses() || !scores.hasOneUse())
      return;
    Value x = scores;
    auto reshape = x.getDefiningOp<ReshapeOp>();
    if (reshape) {
      x = reshape.getInput();
      if (!x.hasOneUse())
        return;
    }
    std::optional<int64_t> classes;
    if (auto slice = x.getDefiningOp<SliceOp>()) {
      auto in = cast<RankedTensorType>(slice.getInput().getType());
      auto out = slice.getType();
      const int64_t last = in.getRank() - 1;
      bool leading =
          llvm::all_of(slice.getStarts(), [](int64_t v) { return v == 0; }) &&
          llvm::all_of(slice.getSteps(), [](int64_t v) { return v == 1; }) &&
          in.getShape().drop_back() == out.getShape().drop_back();
      if (!leading || !slice.getInput().hasOneUse())
        return;
      classes = out.getDimSize(last);
      x = slice.getInput();
    }
    if (auto widen = x.getDefiningOp<CastOp>()) {
      Type from = widen.getInput().getType().getElementType();
      if (widen->hasOneUse() && (from.isBF16() || from.isF16()))
        x = widen.getInput();
    }
    if (x == scores || (reshape && x == reshape.getInput() && !classes))
      return; // nothing to take out
    auto xType = cast<RankedTensorType>(x.getType());
    // The rows stay the reshape's, the class dim becomes x's last.
    if (xType.getShape().back() < scoresType.getDimSize(1) ||
        (!reshape && xType.getRank() != 2))
      return;
    OpBuilder b(op);
    SmallVector<int64_t> shape = {scoresType.getDimSize(0),
                                  xType.getShape().back()};
    if (xType.getNumElements() != shape[0] * shape[1])
      return;
    Value padded = x;
    if (reshape)
      padded = ReshapeOp::create(b, reshape.getLoc(), xType.clone(shape), x);
    op.getScoresMutable().assign(padded);
    if (classes && *classes != shape[1])
      op.setClassesAttr(b.getI64IntegerAttr(*classes));
    // The chain from the old scores back to x is dead now.
    SmallVector<Operation *> dead;
    for (Value v = scores; v != x;) {
      Operation *def = v.getDefiningOp();
      dead.push_back(def);
      v = def->getOperand(0);
    }
    for (Operation *def : dead)
      def->erase();
  }

  void align(MatMulOp mm) {
    auto result = cast<RankedTensorType>(mm.getType());
    auto rhs = cast<RankedTensorType>(mm.getRhs().getType());
    const int64_t n = result.getShape().back();
    if (!result.hasStaticShape() || !rhs.hasStaticShape() || n < minDim ||
        n % multiple == 0)
      return;
    // The real columns are taken back after the widening cast to f32 when
    // that is the product's one reader (the slice's gradient is then f32),
    // else right after an f32 product; other products stay as they are.
    Operation *reader = mm->hasOneUse() ? *mm->getUsers().begin() : nullptr;
    auto widen = dyn_cast_or_null<CastOp>(reader);
    if (widen && !widen.getType().getElementType().isF32())
      widen = nullptr;
    if (!widen && !result.getElementType().isF32())
      return;
    const int64_t padded = (n + multiple - 1) / multiple * multiple;
    // The rhs dimension that becomes the result's last one.
    const int64_t axis =
        mm.getTransposeB() ? rhs.getRank() - 2 : rhs.getRank() - 1;
    OpBuilder b(mm);
    Location loc = mm.getLoc();
    SmallVector<int64_t> zerosShape(rhs.getShape());
    zerosShape[axis] = padded - n;
    auto zerosType = rhs.clone(zerosShape);
    Value zeros = ConstantOp::create(
        b, loc,
        cast<ElementsAttr>(DenseElementsAttr::get(
            zerosType, b.getZeroAttr(rhs.getElementType()))));
    SmallVector<int64_t> wideShape(rhs.getShape());
    wideShape[axis] = padded;
    Value wideRhs = ConcatOp::create(b, loc, rhs.clone(wideShape),
                                     ValueRange{mm.getRhs(), zeros},
                                     b.getI64IntegerAttr(axis));
    SmallVector<int64_t> outShape(result.getShape());
    outShape.back() = padded;
    auto product =
        MatMulOp::create(b, loc, result.clone(outShape), mm.getLhs(), wideRhs,
                         mm.getTransposeAAttr(), mm.getTransposeBAttr());
    Value full = product;
    Operation *last = product;
    RankedTensorType realType = result;
    if (widen) {
      b.setInsertionPoint(widen);
      auto wideCast = CastOp::create(
          b, widen.getLoc(),
          cast<RankedTensorType>(widen.getType()).clone(outShape), product);
      full = wideCast;
      last = wideCast;
      realType = widen.getType();
    }
    b.setInsertionPointAfter(last);
    SmallVector<int64_t> starts(result.getRank(), 0),
        steps(result.getRank(), 1);
    Value real =
        SliceOp::create(b, loc, realType, full, b.getDenseI64ArrayAttr(starts),
                        b.getDenseI64ArrayAttr(steps));
    if (widen) {
      widen.getResult().replaceAllUsesWith(real);
      widen.erase();
    } else {
      mm.getResult().replaceAllUsesWith(real);
    }
    mm.erase();
  }
};

} // namespace
