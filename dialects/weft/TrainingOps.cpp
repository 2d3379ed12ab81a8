//===- TrainingOps.cpp - Verifier, cost and kernels of the optimizer ops --===//
//
// The optimizer updates are few and belong together: their verifier, their
// FLOPs for the cost model and their kernel attributes (KernelABI.h's
// "Optimizer updates") live in this one file.
//
//===----------------------------------------------------------------------===//
#include "dialects/weft/WeftOps.h"

#include "weft/runtime/KernelABI.h"
#include "weft/runtime/LrSchedule.h"

using namespace mlir;
using namespace weft;

static int64_t elementsOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}

//===----------------------------------------------------------------------===//
// adamw_update
//===----------------------------------------------------------------------===//

/// The schedule of an optimizer update's attributes; nullopt (after an
/// error on `op`) when they are not one.
template <typename UpdateOp>
static std::optional<LrSchedule> scheduleOf(UpdateOp op) {
  LrSchedule s;
  StringRef kind = op.getLrSchedule();
  if (!lrScheduleKindNamed(std::string_view(kind.data(), kind.size()),
                           s.kind)) {
    op.emitOpError("has lr_schedule '")
        << kind << "' (constant, linear or cosine)";
    return std::nullopt;
  }
  s.warmupSteps = op.getWarmupSteps();
  s.decaySteps = op.getDecaySteps();
  s.minLrRatio = op.getMinLrRatio().convertToDouble();
  if (s.warmupSteps < 0) {
    op.emitOpError("has a negative warmup_steps");
    return std::nullopt;
  }
  if (s.kind != LrScheduleKind::Constant && s.decaySteps <= s.warmupSteps) {
    op.emitOpError("decays over decay_steps ")
        << s.decaySteps << ", which must exceed warmup_steps " << s.warmupSteps;
    return std::nullopt;
  }
  if (!(s.minLrRatio >= 0.0 && s.minLrRatio <= 1.0)) {
    op.emitOpError("has min_lr_ratio ") << s.minLrRatio << " outside [0, 1]";
    return std::nullopt;
  }
  return s;
}

/// The schedule's kernel attributes after the update's own, when it is
/// not the constant rate (KernelABI.h).
static void appendSchedule(const LrSchedule &s,
                           SmallVectorImpl<int64_t> &attrs) {
  if (s.isConstant())
    return;
  attrs.push_back(static_cast<int64_t>(s.kind));
  attrs.push_back(s.warmupSteps);
  attrs.push_back(s.decaySteps);
  attrs.push_back(weftDoubleToAttr(s.minLrRatio));
}

LogicalResult AdamWUpdateOp::verify() {
  return success(scheduleOf(*this).has_value());
}

StringRef AdamWUpdateOp::getKernelName() { return "adamw"; }
void AdamWUpdateOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  for (APFloat v :
       {getLr(), getBeta1(), getBeta2(), getEps(), getWeightDecay()})
    attrs.push_back(weftDoubleToAttr(v.convertToDouble()));
  if (std::optional<LrSchedule> s = scheduleOf(*this))
    appendSchedule(*s, attrs);
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
  return success(scheduleOf(*this).has_value());
}

StringRef SgdUpdateOp::getKernelName() { return "sgd"; }
void SgdUpdateOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  for (APFloat v : {getLr(), getMomentum(), getDampening(), getWeightDecay()})
    attrs.push_back(weftDoubleToAttr(v.convertToDouble()));
  attrs.push_back(getNesterov());
  attrs.push_back(getMomentumBuffer() ? 1 : 0);
  if (std::optional<LrSchedule> s = scheduleOf(*this))
    appendSchedule(*s, attrs);
}
int64_t SgdUpdateOp::getFlops() { return 5 * elementsOf(getParam()); }
