//===- LrSchedule.h - The learning rate of each update --------------------===//
//
// `weftc compile --train --lr-schedule` (BuildTrainStep, then the adamw and
// sgd kernels' attributes; KernelABI.h): the learning rate of update t (t
// >= 1, the optimizer state's step counter, so a resumed run continues the
// schedule where it stopped) is lr * factor(s), s = t - 1 updates done
// before it, as Hugging Face's get_*_schedule_with_warmup define it:
//   - warmup (s < W): s / W (the first update's rate is 0);
//   - then, with progress p = min(1, (s - W) / max(1, D - W)) over the decay
//     steps D: constant 1, linear 1 - p, cosine (1 + cos(pi p)) / 2;
//   - with a minimum ratio r = min_lr / lr, the decay ends at r instead of
//     0: r + (1 - r) g (Hugging Face's cosine_with_min_lr). After D steps
//     the rate stays at its last value.
// Computed in double on the host (CPU kernels) or in each CUDA kernel from
// the step on the device, in the same operations.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_LRSCHEDULE_H
#define WEFT_RUNTIME_LRSCHEDULE_H

#include <cmath>
#include <cstdint>
#include <string_view>

#ifdef __CUDACC__
#define WEFT_HOST_DEVICE __host__ __device__
#else
#define WEFT_HOST_DEVICE
#endif

namespace weft {

enum class LrScheduleKind : int64_t { Constant = 0, Linear = 1, Cosine = 2 };

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::Constant;
  int64_t warmupSteps = 0;
  int64_t decaySteps = 0;
  double minLrRatio = 0.0;

  /// Whether every update takes the base rate (no kernel attributes).
  WEFT_HOST_DEVICE bool isConstant() const {
    return kind == LrScheduleKind::Constant && warmupSteps == 0;
  }
};

/// The kind `name` names ("constant", "linear" or "cosine"); false for
/// anything else.
inline bool lrScheduleKindNamed(std::string_view name, LrScheduleKind &kind) {
  if (name == "constant")
    kind = LrScheduleKind::Constant;
  else if (name == "linear")
    kind = LrScheduleKind::Linear;
  else if (name == "cosine")
    kind = LrScheduleKind::Cosine;
  else
    return false;
  return true;
}

/// The learning rate of update `t` (>= 1) of base rate `lr`.
WEFT_HOST_DEVICE inline double scheduledLr(const LrSchedule &s, double lr,
                                           int64_t t) {
  if (s.isConstant())
    return lr;
  const double done = static_cast<double>(t - 1);
  if (t - 1 < s.warmupSteps)
    return lr * (done / static_cast<double>(s.warmupSteps));
  if (s.kind == LrScheduleKind::Constant)
    return lr;
  const int64_t span = s.decaySteps - s.warmupSteps;
  double progress = (done - static_cast<double>(s.warmupSteps)) /
                    static_cast<double>(span > 1 ? span : 1);
  if (progress > 1.0)
    progress = 1.0;
  const double pi = 3.14159265358979323846;
  const double decayed = s.kind == LrScheduleKind::Linear
                             ? 1.0 - progress
                             : 0.5 * (1.0 + cos(pi * progress));
  return lr * (s.minLrRatio + (1.0 - s.minLrRatio) * decayed);
}

} // namespace weft

#endif // WEFT_RUNTIME_LRSCHEDULE_H
