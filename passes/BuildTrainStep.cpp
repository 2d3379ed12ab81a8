//===- BuildTrainStep.cpp - Optimizer update after weft-autodiff ----------===//
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "weft/runtime/LrSchedule.h"

namespace weft {
#define GEN_PASS_DEF_BUILDTRAINSTEP
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

constexpr const char *kStepName = "weft.step";

struct BuildTrainStepPass
    : public weft::impl::BuildTrainStepBase<BuildTrainStepPass> {
  using BuildTrainStepBase::BuildTrainStepBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func) {
      module.emitError("no function 'main' to turn into a training step");
      return signalPassFailure();
    }
    if (failed(checkOptions(func)) || failed(build(func)))
      signalPassFailure();
  }

  LogicalResult checkOptions(func::FuncOp func) {
    if (optimizer != "adamw" && optimizer != "sgd")
      return func.emitError("unknown optimizer '")
             << optimizer.getValue() << "' (adamw or sgd)";
    if (lr <= 0.0)
      return func.emitError("the learning rate must be positive");
    if (optimizer == "sgd" && nesterov && (momentum <= 0.0 || dampening != 0.0))
      return func.emitError(
          "nesterov momentum needs momentum > 0 and zero dampening");
    if (clipGradNorm < 0.0)
      return func.emitError("the gradient clipping norm must not be negative");
    LrScheduleKind kind;
    if (!lrScheduleKindNamed(lrSchedule.getValue(), kind))
      return func.emitError("unknown learning-rate schedule '")
             << lrSchedule.getValue() << "' (constant, linear or cosine)";
    if (warmupSteps < 0)
      return func.emitError("warmup-steps must not be negative");
    if (lrSchedule != "constant" && decaySteps <= warmupSteps)
      return func.emitError("a ")
             << lrSchedule.getValue() << " schedule needs decay-steps ("
             << decaySteps.getValue() << ") above warmup-steps ("
             << warmupSteps.getValue() << ")";
    if (minLr < 0.0 || minLr > lr)
      return func.emitError("min-lr (")
             << minLr.getValue() << ") must lie between 0 and lr ("
             << lr.getValue() << ")";
    if (lrSchedule == "constant" && minLr != 0.0)
      return func.emitError(
          "min-lr is the end of a linear or cosine schedule's decay");
    return success();
  }

  /// A persistent buffer that is not a model parameter: optimizer state or
  /// the step counter.
  Value stateParam(OpBuilder &b, Location loc, StringRef name, Type type,
                   StringRef role) {
    auto param = ParamOp::create(b, loc, type, b.getStringAttr(name));
    param->setAttr("weft.role", b.getStringAttr(role));
    return param;
  }

  Value splat(OpBuilder &b, Location loc, RankedTensorType type, double v) {
    Attribute element =
        isa<FloatType>(type.getElementType())
            ? Attribute(b.getFloatAttr(type.getElementType(), v))
            : Attribute(b.getIntegerAttr(type.getElementType(),
                                         static_cast<int64_t>(v)));
    return ConstantOp::create(b, loc, DenseElementsAttr::get(type, element));
  }

  /// Sum of squares of a gradient, as a rank-0 tensor.
  Value sumOfSquares(OpBuilder &b, Location loc, Value grad) {
    Value squared = MulOp::create(b, loc, grad, grad);
    auto type = cast<RankedTensorType>(grad.getType());
    if (type.getRank() == 0)
      return squared;
    SmallVector<int64_t> axes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      axes.push_back(d);
    return ReduceSumOp::create(b, loc, squared, b.getDenseI64ArrayAttr(axes),
                               b.getBoolAttr(false));
  }

  LogicalResult build(func::FuncOp func) {
    auto trainable = func->getAttrOfType<ArrayAttr>("weft.trainable");
    if (!trainable)
      return func.emitError(
          "has no 'weft.trainable' list: run weft-autodiff first");
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    if (ret.getNumOperands() != trainable.size() + 1)
      return func.emitError("returns ")
             << ret.getNumOperands() << " values; weft-autodiff leaves the "
             << "loss and " << trainable.size() << " gradients";
    bool adam = optimizer == "adamw";
    double decay =
        weightDecay >= 0.0 ? weightDecay.getValue() : (adam ? 1e-2 : 0.0);

    OpBuilder b(ret);
    Location loc = ret.getLoc();
    MLIRContext *ctx = func.getContext();

    // The update number t = step + 1, stored back at the end.
    auto stepType = RankedTensorType::get({}, IntegerType::get(ctx, 64));
    Value step = stateParam(b, loc, kStepName, stepType, "step");
    Value t = AddOp::create(b, loc, step, splat(b, loc, stepType, 1));

    SmallVector<Value> grads(ret.getOperands().drop_front());
    for (Value g : grads)
      if (!cast<RankedTensorType>(g.getType()).getElementType().isF32())
        return func.emitError("training needs f32 gradients, got ")
               << g.getType();
    if (clipGradNorm > 0.0 && !grads.empty()) {
      // torch.nn.utils.clip_grad_norm_: scale by min(1, max / (norm + 1e-6)).
      Value total = sumOfSquares(b, loc, grads.front());
      for (Value g : ArrayRef<Value>(grads).drop_front())
        total = AddOp::create(b, loc, total, sumOfSquares(b, loc, g));
      auto scalar = cast<RankedTensorType>(total.getType());
      Value norm = SqrtOp::create(b, loc, total);
      Value coef = DivOp::create(
          b, loc, splat(b, loc, scalar, clipGradNorm),
          AddOp::create(b, loc, norm, splat(b, loc, scalar, 1e-6)));
      Value clamped = MinOp::create(b, loc, coef, splat(b, loc, scalar, 1.0));
      for (Value &g : grads)
        g = MulOp::create(b, loc, g, clamped);
    }

    // The schedule's attributes, as each update takes them.
    StringAttr kind = b.getStringAttr(lrSchedule);
    IntegerAttr warmup = b.getI64IntegerAttr(warmupSteps);
    IntegerAttr decaySpan = b.getI64IntegerAttr(decaySteps);
    FloatAttr minRatio =
        b.getF64FloatAttr(lrSchedule == "constant" ? 0.0 : minLr / lr);
    for (auto [nameAttr, grad] : llvm::zip(trainable, grads)) {
      StringRef name = cast<StringAttr>(nameAttr).getValue();
      Type type = grad.getType();
      Value param = ParamOp::create(b, loc, type, b.getStringAttr(name));
      if (adam) {
        std::string mName = ("adamw.m." + name).str();
        std::string vName = ("adamw.v." + name).str();
        Value m = stateParam(b, loc, mName, type, "optimizer_state");
        Value v = stateParam(b, loc, vName, type, "optimizer_state");
        auto update = AdamWUpdateOp::create(
            b, loc, type, type, type, param, grad, m, v, t,
            b.getF64FloatAttr(lr), b.getF64FloatAttr(beta1),
            b.getF64FloatAttr(beta2), b.getF64FloatAttr(eps),
            b.getF64FloatAttr(decay), kind, warmup, decaySpan, minRatio);
        ParamUpdateOp::create(b, loc, name, update.getNewParam());
        ParamUpdateOp::create(b, loc, mName, update.getNewM());
        ParamUpdateOp::create(b, loc, vName, update.getNewV());
        continue;
      }
      Value buffer;
      std::string bufferName = ("sgd.momentum." + name).str();
      if (momentum != 0.0)
        buffer = stateParam(b, loc, bufferName, type, "optimizer_state");
      SmallVector<Type> resultTypes = {type};
      if (buffer)
        resultTypes.push_back(type);
      auto update = SgdUpdateOp::create(
          b, loc, resultTypes, param, grad, buffer, t, b.getF64FloatAttr(lr),
          b.getF64FloatAttr(momentum), b.getF64FloatAttr(dampening),
          b.getF64FloatAttr(decay), b.getBoolAttr(nesterov), kind, warmup,
          decaySpan, minRatio);
      ParamUpdateOp::create(b, loc, name, update.getNewParam());
      if (buffer)
        ParamUpdateOp::create(b, loc, bufferName,
                              update.getNewMomentumBuffer());
    }
    ParamUpdateOp::create(b, loc, kStepName, t);

    // The step returns the loss alone.
    Value loss = ret.getOperand(0);
    func::ReturnOp::create(b, loc, loss);
    ret.erase();
    func.setType(
        FunctionType::get(ctx, func.getArgumentTypes(), {loss.getType()}));
    DictionaryAttr lossName = b.getDictionaryAttr(
        b.getNamedAttr("weft.name", b.getStringAttr("loss")));
    func.setAllResultAttrs(ArrayRef<DictionaryAttr>{lossName});
    return success();
  }
};

} // namespace
