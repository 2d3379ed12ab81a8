//===- MixedPrecision.cpp - Products in bf16, everything else in f32 ------===//
//
// Casts the operands of every f32 weft.matmul and weft.conv to bf16 and
// their results back to f32. Run on the forward graph before weft-autodiff,
// the casts' gradient rules then cast each product's incoming gradient to
// bf16 (so the backward products are bf16 too) and return f32 gradients to
// the parameters, which stay f32 master weights.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/weft/GradientRules.h"

#include "mlir/IR/Builders.h"

namespace weft {
#define GEN_PASS_DEF_MIXEDPRECISION
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

bool isF32Tensor(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.getElementType().isF32();
}

struct MixedPrecisionPass
    : public weft::impl::MixedPrecisionBase<MixedPrecisionPass> {
  using MixedPrecisionBase::MixedPrecisionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (dtype != "bf16") {
      module.emitError("mixed precision supports dtype bf16, not '")
          << dtype.getValue() << "'";
      return signalPassFailure();
    }
    Type low = BFloat16Type::get(module.getContext());
    SmallVector<Operation *> products;
    module.walk([&](Operation *op) {
      if (isa<MatMulOp, ConvOp>(op) && isF32Tensor(op->getResult(0)) &&
          llvm::all_of(op->getOperands(), isF32Tensor))
        products.push_back(op);
    });
    if (products.empty()) {
      module.emitWarning("no f32 matmul or conv to run in ")
          << dtype.getValue() << "; the program stays f32";
      return;
    }
    // One cast per use, not per value: a value read by several products then
    // gets one gradient per cast, each widened to f32 before autodiff adds
    // them, so no gradient is accumulated in bf16. CSE merges the forward
    // casts once autodiff is done.
    auto narrow = [&](OpBuilder &b, Value v) -> Value {
      return gradient::castTo(b, v.getLoc(), v, low);
    };
    for (Operation *op : products) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
      Value product;
      if (auto mm = dyn_cast<MatMulOp>(op)) {
        product =
            MatMulOp::create(b, loc, resultType.clone(low),
                             narrow(b, mm.getLhs()), narrow(b, mm.getRhs()),
                             mm.getTransposeAAttr(), mm.getTransposeBAttr());
      } else {
        auto conv = cast<ConvOp>(op);
        product = ConvOp::create(
            b, loc, resultType.clone(low), narrow(b, conv.getInput()),
            narrow(b, conv.getWeight()), Value(), conv.getStridesAttr(),
            conv.getPadsAttr(), conv.getDilationsAttr(), conv.getGroupAttr());
      }
      Value result =
          gradient::castTo(b, loc, product, resultType.getElementType());
      if (auto conv = dyn_cast<ConvOp>(op); conv && conv.getBias()) {
        // The bias [M] broadcast over [N, M, D1..Ds], added in f32.
        SmallVector<int64_t> shape(resultType.getRank(), 1);
        shape[1] = resultType.getDimSize(1);
        result = gradient::add(
            b, loc, result, gradient::reshape(b, loc, conv.getBias(), shape));
      }
      op->getResult(0).replaceAllUsesWith(result);
      op->erase();
    }
  }
};

} // namespace
