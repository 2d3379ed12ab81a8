//===- FusionOps.cpp - weft.fused: verifier, kernel program, cost ---------===//
//
// A weft.fused body is a straight-line program over the elements of its
// results. This file checks that it is one the runtime can run and encodes
// it as weft_k_fused's attributes (KernelABI.h): the operands' registers,
// the splat constants as immediates, one instruction per body op, and the
// registers the results come from.
//
//===----------------------------------------------------------------------===//
#include "dialects/weft/WeftOps.h"

#include "dialects/weft/ElementTypes.h"
#include "dialects/weft/Fusion.h"

#include "weft/runtime/KernelABI.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace weft;

namespace {

bool broadcastsTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  size_t offset = to.size() - from.size();
  for (auto [i, d] : llvm::enumerate(from))
    if (d != 1 && d != to[offset + i])
      return false;
  return true;
}

bool isFusibleElement(Type type) {
  return type.isF32() || type.isBF16() || type.isF16();
}

/// A splat constant's value as a double, if it is one of a fusible type.
std::optional<double> splatValue(ConstantOp constant) {
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense || !dense.isSplat() || !isFusibleElement(dense.getElementType()))
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

} // namespace

std::optional<int64_t> weft::fusedOpcode(Operation *op) {
  if (isa<CastOp>(op))
    return WEFT_FUSED_COPY;
  if (isa<NegOp, SqrtOp, ExpOp, LogOp, TanhOp, ErfOp, ReluOp, SigmoidOp, AddOp,
          SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp>(op)) {
    auto kernel = cast<KernelOpInterface>(op);
    SmallVector<int64_t> attrs;
    kernel.getKernelAttributes(attrs);
    return kernel.getKernelName() == "binary" ? WEFT_FUSED_BINARY + attrs[0]
                                              : attrs[0];
  }
  return std::nullopt;
}

bool weft::isFusibleConstant(Operation *op) {
  auto constant = dyn_cast<ConstantOp>(op);
  return constant && splatValue(constant).has_value();
}

bool weft::isFusibleTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() &&
         isFusibleElement(tensor.getElementType());
}

LogicalResult FusedOp::verify() {
  if (getNumResults() == 0)
    return emitOpError("has no results");
  ArrayRef<int64_t> shape = getIterationShape();
  for (Type t : getResultTypes())
    if (cast<RankedTensorType>(t).getShape() != shape)
      return emitOpError("results differ in shape: ")
             << t << " against " << getResult(0).getType();
  if (getNumOperands() > WEFT_FUSED_MAX_OPERANDS ||
      getNumResults() > WEFT_FUSED_MAX_RESULTS)
    return emitOpError("has ")
           << getNumOperands() << " operands and " << getNumResults()
           << " results; the runtime takes at most " << WEFT_FUSED_MAX_OPERANDS
           << " and " << WEFT_FUSED_MAX_RESULTS;
  Block &body = getBody().front();
  if (body.getNumArguments() != getNumOperands())
    return emitOpError("body has ")
           << body.getNumArguments() << " arguments for " << getNumOperands()
           << " operands";
  for (auto [arg, operand] : llvm::zip(body.getArguments(), getOperands())) {
    if (arg.getType() != operand.getType())
      return emitOpError("body argument ")
             << arg.getArgNumber() << " has type " << arg.getType()
             << ", its operand " << operand.getType();
    if (!broadcastsTo(cast<RankedTensorType>(arg.getType()).getShape(), shape))
      return emitOpError("operand ")
             << arg.getArgNumber() << " of type " << arg.getType()
             << " does not broadcast to the iteration shape";
  }
  int64_t registers = getNumOperands();
  for (Operation &op : body.without_terminator()) {
    ++registers;
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      if (!isFusibleConstant(constant) ||
          !broadcastsTo(constant.getType().getShape(), shape))
        return op.emitOpError("in a weft.fused body must be a splat f32, "
                              "bf16 or f16 constant that broadcasts to the "
                              "iteration shape");
      continue;
    }
    if (!fusedOpcode(&op))
      return op.emitOpError("cannot run in a weft.fused body");
    auto type = dyn_cast<RankedTensorType>(op.getResult(0).getType());
    if (!type || type.getShape() != shape ||
        !isFusibleElement(type.getElementType()))
      return op.emitOpError("in a weft.fused body must give an f32, bf16 or "
                            "f16 tensor of the iteration shape, not ")
             << op.getResult(0).getType();
    for (Value operand : op.getOperands())
      if (!isFusibleTensor(operand.getType()))
        return op.emitOpError("in a weft.fused body reads ")
               << operand.getType() << "; only f32, bf16 and f16 are fused";
  }
  if (registers > WEFT_FUSED_MAX_REGISTERS)
    return emitOpError("needs ") << registers << " registers; the runtime has "
                                 << WEFT_FUSED_MAX_REGISTERS;
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ")
           << yield.getValues().getTypes() << " for results of type "
           << getResultTypes();
  return success();
}

StringRef FusedOp::getKernelName() { return "fused"; }

void FusedOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  Block &body = getBody().front();
  DenseMap<Value, int64_t> registerOf;
  for (BlockArgument arg : body.getArguments())
    registerOf[arg] = arg.getArgNumber();
  SmallVector<double> immediates;
  for (Operation &op : body.without_terminator())
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      registerOf[constant] = getNumOperands() + immediates.size();
      immediates.push_back(*splatValue(constant));
    }
  attrs.push_back(getNumOperands());
  attrs.push_back(getNumResults());
  attrs.push_back(immediates.size());
  for (double v : immediates)
    attrs.push_back(weftDoubleToAttr(v));
  SmallVector<Operation *> instructions;
  for (Operation &op : body.without_terminator())
    if (!isa<ConstantOp>(op))
      instructions.push_back(&op);
  attrs.push_back(instructions.size());
  int64_t next = getNumOperands() + immediates.size();
  for (Operation *op : instructions) {
    attrs.push_back(*fusedOpcode(op));
    attrs.push_back(registerOf.lookup(op->getOperand(0)));
    attrs.push_back(
        op->getNumOperands() > 1 ? registerOf.lookup(op->getOperand(1)) : -1);
    attrs.push_back(*getDTypeOf(
        cast<RankedTensorType>(op->getResult(0).getType()).getElementType()));
    registerOf[op->getResult(0)] = next++;
  }
  for (Value v : body.getTerminator()->getOperands())
    attrs.push_back(registerOf.lookup(v));
}

int64_t FusedOp::getFlops() {
  int64_t flops = 0;
  for (Operation &op : getBody().front().without_terminator())
    if (auto cost = dyn_cast<CostOpInterface>(op))
      flops += cost.getFlops();
  return flops;
}
