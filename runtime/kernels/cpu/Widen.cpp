//===- Widen.cpp - bf16 calls of f32 kernels ------------------------------===//
#include "Widen.h"

#include "Parallel.h"
#include "weft/runtime/Float16.h"
#include "weft/runtime/KernelABI.h"

#include <vector>

namespace weft {
namespace cpu {

namespace {

/// f32 copies of one call's bf16 tensors, kept per thread and only grown,
/// so steady-state training allocates nothing.
thread_local std::vector<std::vector<float>> gWide;

void widen(const uint16_t *src, float *dst, int64_t n) {
  parallelFor(n, kParallelGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      dst[i] = bfloat16ToFloat(src[i]);
  });
}

void narrow(const float *src, uint16_t *dst, int64_t n) {
  parallelFor(n, kParallelGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      dst[i] = floatToBFloat16(src[i]);
  });
}

} // namespace

bool runBF16AsF32(void *const *bufs, const int64_t *desc, int numResults,
                  KernelEntry f32Kernel) {
  const int64_t numTensors = desc[0];
  // Where each tensor's dtype sits in desc, and its element count.
  std::vector<int64_t> dtypeAt(numTensors), numel(numTensors);
  int64_t pos = 1;
  bool any = false;
  for (int64_t t = 0; t < numTensors; ++t) {
    dtypeAt[t] = pos;
    any |= desc[pos] == WEFT_BF16;
    const int64_t rank = desc[pos + 1];
    numel[t] = 1;
    for (int64_t d = 0; d < rank; ++d)
      numel[t] *= desc[pos + 2 + d];
    pos += 2 + rank;
  }
  if (!any)
    return false;
  const int64_t descLength = pos + 1 + desc[pos];
  std::vector<int64_t> wideDesc(desc, desc + descLength);
  std::vector<void *> wideBufs(bufs, bufs + numTensors);
  if (gWide.size() < static_cast<size_t>(numTensors))
    gWide.resize(numTensors);
  for (int64_t t = 0; t < numTensors; ++t) {
    if (desc[dtypeAt[t]] != WEFT_BF16)
      continue;
    std::vector<float> &copy = gWide[t];
    if (copy.size() < static_cast<size_t>(numel[t]))
      copy.resize(numel[t]);
    wideDesc[dtypeAt[t]] = WEFT_F32;
    wideBufs[t] = copy.data();
    if (t < numTensors - numResults)
      widen(static_cast<const uint16_t *>(bufs[t]), copy.data(), numel[t]);
  }
  f32Kernel(wideBufs.data(), wideDesc.data());
  for (int64_t t = numTensors - numResults; t < numTensors; ++t)
    if (desc[dtypeAt[t]] == WEFT_BF16)
      narrow(gWide[t].data(), static_cast<uint16_t *>(bufs[t]), numel[t]);
  return true;
}

} // namespace cpu
} // namespace weft
