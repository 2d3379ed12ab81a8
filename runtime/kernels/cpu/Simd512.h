//===- Simd512.h - AVX-512 helpers shared by the conv and gemm kernels ----===//
//
// Only for functions marked WEFT_TARGET_AVX512 (Gemm.h), which run only
// when gemmUsesOwnKernels() is true.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_SIMD512_H
#define WEFT_RUNTIME_KERNELS_CPU_SIMD512_H

#include "Gemm.h"

#if WEFT_HAVE_AVX512_KERNELS
#include <cstdint>
#include <immintrin.h>

namespace weft {
namespace cpu {

/// The first n lanes (n clamped to [0, 16]).
WEFT_TARGET_AVX512 inline __mmask16 lanesBelow(int64_t n) {
  return n <= 0    ? __mmask16(0)
         : n >= 16 ? __mmask16(0xFFFF)
                   : static_cast<__mmask16>((1u << n) - 1);
}

/// Transposes the 16x16 matrix whose rows are r[0..15], in place.
WEFT_TARGET_AVX512 inline __attribute__((always_inline)) void
transpose16(__m512 *r) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 16; i += 4) {
    __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 2]);
    __m512d c = _mm512_castps_pd(t[i + 1]), d = _mm512_castps_pd(t[i + 3]);
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
  }
  // Each 128-bit lane now holds a 4x4 block transposed; move the blocks.
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    t[j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);
    t[4 + j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xdd);
    t[8 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
    t[12 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xdd);
  }
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
  }
}

} // namespace cpu
} // namespace weft

// GCC 12 warns about the deliberately undefined operand that some AVX-512
// intrinsics (unpack, shuffle) build their result from.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#endif // WEFT_HAVE_AVX512_KERNELS

#endif // WEFT_RUNTIME_KERNELS_CPU_SIMD512_H
