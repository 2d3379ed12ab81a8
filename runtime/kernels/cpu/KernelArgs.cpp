//===- KernelArgs.cpp - Reader over a kernel call's bufs/desc -------------===//

#include "KernelArgs.h"

namespace weft {
namespace cpu {

const char *dtypeName(int64_t dtype) { return weftDTypeName(dtype); }

KernelArgs::KernelArgs(const char *kernel, void *const *bufs,
                       const int64_t *desc)
    : kernel_(kernel) {
  int64_t count = desc[0];
  if (count < 0 || count > (1 << 20))
    fatal(kExitFailure, "kernel %s: bad tensor count %lld", kernel,
          static_cast<long long>(count));
  numTensors_ = static_cast<int>(count);
  if (numTensors_ > kInlineTensors) {
    heap_.reset(new TensorArg[numTensors_]);
    tensors_ = heap_.get();
  }
  const int64_t *p = desc + 1;
  for (int t = 0; t < numTensors_; ++t) {
    TensorArg &ta = tensors_[t];
    ta.data = bufs[t];
    ta.dtype = p[0];
    int64_t rank = p[1];
    if (rank < 0 || rank > kMaxRank)
      fatal(kExitFailure, "kernel %s: tensor %d has unsupported rank %lld",
            kernel, t, static_cast<long long>(rank));
    if (weftDTypeSize(ta.dtype) == 0)
      fatal(kExitFailure, "kernel %s: tensor %d has unknown dtype code %lld",
            kernel, t, static_cast<long long>(ta.dtype));
    ta.rank = static_cast<int>(rank);
    ta.dims = p + 2;
    ta.numel = 1;
    for (int d = 0; d < ta.rank; ++d) {
      if (ta.dims[d] < 0)
        fatal(kExitFailure, "kernel %s: tensor %d has a negative dim", kernel,
              t);
      ta.numel *= ta.dims[d];
    }
    p += 2 + rank;
  }
  numAttrs_ = p[0];
  attrs_ = p + 1;
}

const int64_t *KernelArgs::attrArray(int64_t j, int64_t count) const {
  expectAttrs(j + count);
  return attrs_ + j;
}

void KernelArgs::expectTensors(int lo, int hi) const {
  if (numTensors_ < lo || numTensors_ > hi)
    fatal(kExitFailure, "kernel %s: expected %d to %d tensors, got %d", kernel_,
          lo, hi, numTensors_);
}

void KernelArgs::expectAttrs(int64_t n) const {
  if (numAttrs_ < n)
    fatal(kExitFailure,
          "kernel %s: expected at least %lld attributes, got %lld", kernel_,
          static_cast<long long>(n), static_cast<long long>(numAttrs_));
}

LrSchedule KernelArgs::lrSchedule(int64_t first) const {
  LrSchedule schedule;
  if (numAttrs_ <= first)
    return schedule;
  expectAttrs(first + 4);
  const int64_t kind = attrs_[first];
  schedule.kind = static_cast<LrScheduleKind>(kind);
  schedule.warmupSteps = attrs_[first + 1];
  schedule.decaySteps = attrs_[first + 2];
  schedule.minLrRatio = attrDouble(first + 3);
  if (kind < 0 || kind > 2 || schedule.warmupSteps < 0 ||
      (kind != 0 && schedule.decaySteps <= schedule.warmupSteps) ||
      !(schedule.minLrRatio >= 0.0 && schedule.minLrRatio <= 1.0))
    invalid("invalid learning-rate schedule attributes");
  return schedule;
}

void KernelArgs::expectDType(int i, int64_t dtype) const {
  if (tensors_[i].dtype != dtype)
    fatal(kExitFailure, "kernel %s: tensor %d is %s, expected %s", kernel_, i,
          dtypeName(tensors_[i].dtype), dtypeName(dtype));
}

void KernelArgs::expectSameNumel(int i, int j) const {
  if (tensors_[i].numel != tensors_[j].numel)
    fatal(kExitFailure,
          "kernel %s: tensors %d and %d differ in size (%lld vs %lld)", kernel_,
          i, j, static_cast<long long>(tensors_[i].numel),
          static_cast<long long>(tensors_[j].numel));
}

void KernelArgs::unsupportedDType(int64_t dtype) const {
  fatal(kExitFailure, "kernel %s: unsupported dtype %s", kernel_,
        dtypeName(dtype));
}

void KernelArgs::invalid(const char *what) const {
  fatal(kExitFailure, "kernel %s: %s", kernel_, what);
}

} // namespace cpu
} // namespace weft
