//===- TrainingOps.cpp - Verifier, cost and kernels of the optimizer ops --===//
//
// The optimizer updates are few and belong together: their verifier, their
// FLOPs for the cost model and their kernel attributes (KernelABI.h's
// "Optimizer updates") live in this one file.
//
//===----------------------------------------------------------------------===//
#include "dialects/weft/WeftOps.h"

#include "weft/runtime/KernelABI.h"

using namespace mlir;
using namespace weft;

static int64_t elementsOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}

//===----------------------------------------------------------------------===//
// adamw_update
//===----------------------------------------------------------------------===//

StringRef AdamWUpdateOp::getKernelName() { return "adamw"; }
void AdamWUpdateOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  for (APFloat v :
       {getLr(), getBeta1(), getBeta2(), getEps(), getWeightDecay()})
    attrs.push_back(weftDoubleToAttr(v.convertToDouble()));
}
int64_t AdamWUpdateOp::getFlops() { return 12 * elementsOf(getParam()); }

//===----------------------------------------------------------------------===//
// sgd_update
//===----------------------------------------------------------------------===//

LogicalResult SgdUpdateOp::verify() {
  bool hasBuffer = static_cast<bool>(getMomentumBuffer());
  if (hasBuffer != static_cast<bool>(getNewMomentumBuffer()))
    return emitOpError("takes a momentum buffer exactly when it returns one");
  if (hasBuffer != (getMomentum().convertToDouble() != 0.0))
    return emitOpError("needs a momentum buffer exactly when momentum != 0");
  Type t = getParam().getType();
  if (getGrad().getType() != t || getNewParam().getType() != t ||
      (hasBuffer && (getMomentumBuffer().getType() != t ||
                     getNewMomentumBuffer().getType() != t)))
    return emitOpError("parameter, gradient and buffers must have one type");
  if (getNesterov() && (getMomentum().convertToDouble() <= 0.0 ||
                        getDampening().convertToDouble() != 0.0))
    return emitOpError("nesterov needs momentum > 0 and zero dampening");
  return success();
}

StringRef SgdUpdateOp::getKernelName() { return "sgd"; }
void SgdUpdateOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  for (APFloat v : {getLr(), getMomentum(), getDampening(), getWeightDecay()})
    attrs.push_back(weftDoubleToAttr(v.convertToDouble()));
  attrs.push_back(getNesterov());
  attrs.push_back(getMomentumBuffer() ? 1 : 0);
}
int64_t SgdUpdateOp::getFlops() { return 5 * elementsOf(getParam()); }
