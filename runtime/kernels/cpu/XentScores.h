//===- XentScores.h - softmax_xent's scores as the f32 code reads them ----===//
//
// The CPU cross-entropy kernels (Loss.cpp, LossGrad.cpp) compute on f32
// samples [classes, d]. Scores of another dtype (bf16, f16) or with padding
// after the classes (the `classes` attribute) are widened and compacted into
// a scratch buffer one sample at a time, and results stored back with the
// padding filled.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_XENTSCORES_H
#define WEFT_RUNTIME_KERNELS_CPU_XENTSCORES_H

#include "DTypes.h"

#include <cstdint>
#include <type_traits>

namespace weft {
namespace cpu {

struct XentScores {
  const void *data = nullptr;
  int64_t dtype = WEFT_F32;
  int64_t c = 0, classes = 0, d = 1; // dim 1, the classes in it, positions

  /// Whether samples are read and written in place (f32, no padding).
  bool direct() const { return dtype == WEFT_F32 && classes == c; }

  /// Sample `s` as f32 [classes, d]: in place, or widened into `buf`
  /// (classes * d floats).
  const float *sample(int64_t s, float *buf) const {
    if (direct())
      return static_cast<const float *>(data) + s * c * d;
    const int64_t count = classes * d, start = s * c * d;
    auto read = [&](const auto *src) {
      for (int64_t i = 0; i < count; ++i)
        buf[i] = widen(src[start + i]);
    };
    if (dtype == WEFT_BF16)
      read(static_cast<const BFloat16 *>(data));
    else if (dtype == WEFT_F16)
      read(static_cast<const Half *>(data));
    else
      read(static_cast<const float *>(data));
    return buf;
  }

  /// Stores f32 [classes, d] `values` as sample `s` of `out` (a tensor of
  /// these scores' shape and dtype), the padding set to `pad`.
  void store(void *out, int64_t s, const float *values, float pad) const {
    const int64_t start = s * c * d, count = classes * d, all = c * d;
    auto put = [&](auto *dst) {
      using T = std::remove_pointer_t<decltype(dst)>;
      for (int64_t i = 0; i < count; ++i)
        dst[start + i] = narrowTo<T>(values[i]);
      for (int64_t i = count; i < all; ++i)
        dst[start + i] = narrowTo<T>(pad);
    };
    if (dtype == WEFT_BF16)
      put(static_cast<BFloat16 *>(out));
    else if (dtype == WEFT_F16)
      put(static_cast<Half *>(out));
    else
      put(static_cast<float *>(out));
  }
};

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_XENTSCORES_H
