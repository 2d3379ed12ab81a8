//===- AppendLoss.cpp - The training loss as @main's only result ----------===//
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace weft {
#define GEN_PASS_DEF_APPENDLOSS
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

bool isScalar(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() && tensor.getNumElements() == 1 &&
         isa<FloatType>(tensor.getElementType());
}

struct AppendLossPass : public weft::impl::AppendLossBase<AppendLossPass> {
  using AppendLossBase::AppendLossBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func) {
      module.emitError("no function 'main' to train");
      return signalPassFailure();
    }
    if (failed(append(func)))
      signalPassFailure();
  }

  /// The argument named `name`, or a new one of `type` appended to @main.
  FailureOr<Value> targetArgument(func::FuncOp func, RankedTensorType type) {
    for (BlockArgument arg : func.getArguments()) {
      auto argName =
          func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "weft.name");
      if (!argName || argName.getValue() != target)
        continue;
      if (arg.getType() != type)
        return func.emitError("the loss target '")
               << target.getValue() << "' is " << arg.getType()
               << ", the loss needs " << type;
      return Value(arg);
    }
    unsigned index = func.getNumArguments();
    Builder b(func.getContext());
    DictionaryAttr attrs = b.getDictionaryAttr(
        b.getNamedAttr("weft.name", b.getStringAttr(target.getValue())));
    if (failed(func.insertArgument(index, type, attrs, func.getLoc())))
      return failure();
    return Value(func.getArgument(index));
  }

  LogicalResult append(func::FuncOp func) {
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    OpBuilder b(ret);
    Location loc = ret.getLoc();
    Value lossValue;
    if (this->loss == "mse" || this->loss == "cross_entropy") {
      if (target.empty())
        return func.emitError("the built-in loss '")
               << this->loss.getValue() << "' needs a target input "
               << "(--loss-target INPUT)";
      if (ret.getNumOperands() != 1)
        return func.emitError("the model has ")
               << ret.getNumOperands()
               << " outputs; a built-in loss needs exactly one";
      Value output = ret.getOperand(0);
      auto outType = cast<RankedTensorType>(output.getType());
      if (!isa<FloatType>(outType.getElementType()))
        return func.emitError("the model's output is ")
               << outType << "; a loss needs floats";
      if (this->loss == "mse") {
        FailureOr<Value> t = targetArgument(func, outType);
        if (failed(t))
          return failure();
        Value diff = SubOp::create(b, loc, output, *t);
        Value squared = MulOp::create(b, loc, diff, diff);
        SmallVector<int64_t> axes;
        for (int64_t d = 0; d < outType.getRank(); ++d)
          axes.push_back(d);
        lossValue = axes.empty()
                        ? squared
                        : Value(ReduceMeanOp::create(
                              b, loc, squared, b.getDenseI64ArrayAttr(axes),
                              b.getBoolAttr(false)));
      } else {
        if (outType.getRank() < 2)
          return func.emitError("cross_entropy needs an output [N, C, ...], "
                                "got ")
                 << outType;
        SmallVector<int64_t> labelShape = {outType.getDimSize(0)};
        for (int64_t d = 2; d < outType.getRank(); ++d)
          labelShape.push_back(outType.getDimSize(d));
        auto labelType = RankedTensorType::get(
            labelShape, IntegerType::get(func.getContext(), 64));
        FailureOr<Value> t = targetArgument(func, labelType);
        if (failed(t))
          return failure();
        lossValue = SoftmaxCrossEntropyOp::create(b, loc, output, *t, Value(),
                                                  b.getStringAttr("mean"),
                                                  IntegerAttr(), IntegerAttr());
      }
    } else {
      // The loss is one of the model's outputs.
      int index = -1;
      for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
        auto name = func.getResultAttrOfType<StringAttr>(i, "weft.name");
        if (this->loss.empty() ? ret.getNumOperands() == 1
                               : (name && name.getValue() == this->loss))
          index = i;
      }
      if (index < 0)
        return func.emitError(this->loss.empty()
                                  ? "the model has several outputs; name the "
                                    "loss with --loss OUTPUT"
                                  : "the model has no output named '")
               << this->loss.getValue() << (this->loss.empty() ? "" : "'");
      lossValue = ret.getOperand(index);
    }
    if (!isScalar(lossValue.getType()))
      return func.emitError("the loss must be a scalar, got ")
             << lossValue.getType();
    func::ReturnOp::create(b, loc, lossValue);
    ret.erase();
    func.setType(FunctionType::get(func.getContext(), func.getArgumentTypes(),
                                   {lossValue.getType()}));
    DictionaryAttr lossName = b.getDictionaryAttr(
        b.getNamedAttr("weft.name", b.getStringAttr("loss")));
    func.setAllResultAttrs(ArrayRef<DictionaryAttr>{lossName});
    return success();
  }
};

} // namespace
