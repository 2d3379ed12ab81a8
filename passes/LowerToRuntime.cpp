//===- LowerToRuntime.cpp - weft graph -> weftrt kernel launches ----------===//
#include "passes/Passes.h"

#include "weft/runtime/KernelABI.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

namespace weft {
#define GEN_PASS_DEF_LOWERTORUNTIME
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// Which element types the CPU kernels accept, per kernel family. Anything
/// else is rejected at compile time with the op and type named, instead of
/// failing when the bundle runs.
bool cpuSupports(Operation *op, Type elementType) {
  std::optional<WeftDType> dtype = getDTypeOf(elementType);
  if (!dtype)
    return false;
  int64_t code = *dtype;
  bool isF32 = code == WEFT_F32;
  bool arithmetic =
      isF32 || code == WEFT_F64 || code == WEFT_I64 || code == WEFT_I32;
  StringRef kernel = cast<KernelOpInterface>(op).getKernelName();
  if (kernel == "unary") {
    if (isa<NotOp>(op))
      return code == WEFT_BOOL;
    if (isa<NegOp, ReluOp>(op))
      return arithmetic;
    return isF32 || code == WEFT_F64;
  }
  if (kernel == "binary") {
    if (isa<AndOp, OrOp>(op))
      return code == WEFT_BOOL;
    return arithmetic;
  }
  if (kernel == "compare")
    return arithmetic || code == WEFT_BOOL;
  if (kernel == "reduce" && !isa<ReduceMeanOp>(op))
    return arithmetic;
  if (kernel == "where" || kernel == "cast" || kernel == "transpose" ||
      kernel == "concat" || kernel == "split" || kernel == "slice" ||
      kernel == "gather" || kernel == "expand" || kernel == "trilu")
    return true;
  // matmul, conv, pools, norms, softmax, reduce_mean, softmax_xent.
  return isF32;
}

/// The element type that decides kernel support: the first floating operand
/// for most ops; for compares and casts the operand's type.
Type decidingElementType(Operation *op) {
  Value v = op->getNumOperands() ? op->getOperand(0) : op->getResult(0);
  if (isa<WhereOp>(op))
    v = op->getOperand(1);
  if (isa<GatherOp>(op))
    v = op->getOperand(0);
  return cast<RankedTensorType>(v.getType()).getElementType();
}

void appendTensorDesc(SmallVectorImpl<int64_t> &desc, Type type) {
  auto tensor = cast<RankedTensorType>(type);
  desc.push_back(*getDTypeOf(tensor.getElementType()));
  desc.push_back(tensor.getRank());
  desc.append(tensor.getShape().begin(), tensor.getShape().end());
}

DictionaryAttr slotAttr(Builder &b, StringRef name, RankedTensorType type) {
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("name", b.getStringAttr(name)),
      b.getNamedAttr("type", TypeAttr::get(type))};
  return b.getDictionaryAttr(fields);
}

struct LowerToRuntimePass
    : public weft::impl::LowerToRuntimeBase<LowerToRuntimePass> {
  using LowerToRuntimeBase::LowerToRuntimeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(entry);
    if (!func) {
      module.emitError() << "no function '" << entry << "' to lower";
      return signalPassFailure();
    }
    if (failed(lower(func)))
      return signalPassFailure();
  }

  LogicalResult lower(func::FuncOp func) {
    MLIRContext *ctx = func.getContext();
    Builder attrBuilder(ctx);
    if (!llvm::hasSingleElement(func.getBody()))
      return func.emitError("weft-lower-to-runtime expects a single block");

    auto bufferType = rt::BufferType::get(ctx);
    OpBuilder moduleBuilder(func);
    auto newFunc =
        func::FuncOp::create(moduleBuilder, func.getLoc(), "weft_model_run",
                             FunctionType::get(ctx, {}, {}));
    Block *body = newFunc.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockBegin(body);

    DenseMap<Value, Value> buffers; // tensor value -> buffer
    SmallVector<Attribute> inputSlots, paramSlots, outputSlots;

    // Graph inputs.
    Block &oldBody = func.getBody().front();
    for (BlockArgument arg : oldBody.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || !type.hasStaticShape())
        return func.emitError("input ")
               << arg.getArgNumber() << " is not a static-shape tensor";
      auto name =
          func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "weft.name");
      std::string fallback = "input" + std::to_string(arg.getArgNumber());
      inputSlots.push_back(
          slotAttr(attrBuilder, name ? name.getValue() : fallback, type));
      buffers[arg] =
          rt::InputOp::create(b, arg.getLoc(), bufferType, arg.getArgNumber());
    }

    llvm::StringMap<Value> paramBuffers;
    for (Operation &op : oldBody.without_terminator()) {
      for (Type t : op.getResultTypes()) {
        auto type = dyn_cast<RankedTensorType>(t);
        if (!type || !type.hasStaticShape() ||
            !getDTypeOf(type.getElementType()))
          return op.emitError("result type ")
                 << t << " has no runtime representation";
      }
      Location loc = op.getLoc();
      if (auto param = dyn_cast<ParamOp>(op)) {
        Value &buffer = paramBuffers[param.getName()];
        if (!buffer) {
          buffer = rt::ParamOp::create(b, loc, bufferType,
                                       static_cast<int64_t>(paramSlots.size()));
          paramSlots.push_back(
              slotAttr(attrBuilder, param.getName(),
                       cast<RankedTensorType>(param.getType())));
        }
        buffers[param] = buffer;
        continue;
      }
      if (auto constant = dyn_cast<ConstantOp>(op)) {
        buffers[constant] =
            rt::ConstantOp::create(b, loc, bufferType, constant.getValue());
        continue;
      }
      if (auto reshape = dyn_cast<ReshapeOp>(op)) {
        buffers[reshape] = buffers.lookup(reshape.getInput());
        continue;
      }
      auto kernelOp = dyn_cast<KernelOpInterface>(op);
      if (!kernelOp)
        return op.emitError("has no lowering to the runtime");
      Type elementType = decidingElementType(&op);
      if (!cpuSupports(&op, elementType))
        return op.emitError("element type ")
               << elementType << " is not supported by the cpu backend";

      SmallVector<Value> launchBuffers;
      SmallVector<int64_t> desc = {
          static_cast<int64_t>(op.getNumOperands() + op.getNumResults())};
      for (Value operand : op.getOperands()) {
        launchBuffers.push_back(buffers.lookup(operand));
        appendTensorDesc(desc, operand.getType());
      }
      for (Value result : op.getResults()) {
        auto type = cast<RankedTensorType>(result.getType());
        Value buffer = rt::AllocOp::create(
            b, loc, bufferType, std::max<int64_t>(1, getTensorBytes(type)));
        buffers[result] = buffer;
        launchBuffers.push_back(buffer);
        appendTensorDesc(desc, type);
      }
      SmallVector<int64_t> attrs;
      kernelOp.getKernelAttributes(attrs);
      desc.push_back(attrs.size());
      desc.append(attrs.begin(), attrs.end());
      rt::LaunchOp::create(b, loc, kernelOp.getKernelName(), launchBuffers,
                           desc);
    }

    // Outputs: a buffer allocated for exactly this output is replaced by the
    // output slot, so the kernel writes there directly; anything else
    // (inputs, parameters, constants, a value returned twice) is copied.
    auto ret = cast<func::ReturnOp>(oldBody.getTerminator());
    for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
      auto type = cast<RankedTensorType>(value.getType());
      auto name = func.getResultAttrOfType<StringAttr>(index, "weft.name");
      std::string fallback = "output" + std::to_string(index);
      outputSlots.push_back(
          slotAttr(attrBuilder, name ? name.getValue() : fallback, type));
      Value buffer = buffers.lookup(value);
      if (auto alloc = buffer.getDefiningOp<rt::AllocOp>()) {
        OpBuilder at(alloc);
        Value slot = rt::OutputOp::create(at, alloc.getLoc(), bufferType,
                                          static_cast<int64_t>(index));
        alloc.getBuffer().replaceAllUsesWith(slot);
        alloc.erase();
        for (auto &entry : buffers)
          if (entry.second == buffer)
            entry.second = slot;
        continue;
      }
      Value slot = rt::OutputOp::create(b, ret.getLoc(), bufferType,
                                        static_cast<int64_t>(index));
      rt::CopyOp::create(b, ret.getLoc(), buffer, slot,
                         std::max<int64_t>(1, getTensorBytes(type)));
    }
    func::ReturnOp::create(b, ret.getLoc());

    newFunc->setAttr("weftrt.inputs", attrBuilder.getArrayAttr(inputSlots));
    newFunc->setAttr("weftrt.params", attrBuilder.getArrayAttr(paramSlots));
    newFunc->setAttr("weftrt.outputs", attrBuilder.getArrayAttr(outputSlots));
    func.erase();
    return success();
  }
};

} // namespace
