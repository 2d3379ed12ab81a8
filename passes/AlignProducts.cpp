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
