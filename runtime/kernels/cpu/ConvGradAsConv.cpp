//===- ConvGradAsConv.cpp - The stride-1 input gradient as a conv ---------===//
//
// With unit strides, dx[i] = sum over taps t of dy[i + pad - t * dilation]
// w[t] is itself a conv: of dy, by the kernel flipped along every dim with
// its input and output channels swapped, with (kernel - 1) * dilation - pad
// leading padding. Running it through conv's forward (convForward) gives
// the input gradient Winograd, the images-together products and every other
// path of the forward, and needs no col2im.
//
//===----------------------------------------------------------------------===//

#include "ConvForward.h"
#include "Gemm.h"
#include "Parallel.h"
#include "Scratch.h"
#include "Simd512.h"

namespace weft {
namespace cpu {
namespace {

#if WEFT_HAVE_AVX512_KERNELS
/// flipKernels for 1x1 kernels (a transpose of each group's [OCg, Cg]
/// weight) by masked 16 x 16 in-register transposes: output channels
/// [o0, o0 + 16) and input channels [c0, c1), c1 - c0 <= 16.
WEFT_TARGET_AVX512 void transposeTile(const ConvShape &p, const float *w,
                                      float *flipped, int64_t grp, int64_t o0,
                                      int64_t c0, int64_t c1) {
  const int64_t rows = p.ocg - o0 < 16 ? p.ocg - o0 : 16;
  const __mmask16 cm = lanesBelow(c1 - c0), om = lanesBelow(rows);
  __m512 r[16];
#pragma GCC unroll 16
  for (int l = 0; l < 16; ++l)
    r[l] =
        l < rows
            ? _mm512_maskz_loadu_ps(cm, w + (grp * p.ocg + o0 + l) * p.cg + c0)
            : _mm512_setzero_ps();
  transpose16(r);
  for (int64_t c = c0; c < c1; ++c)
    _mm512_mask_storeu_ps(flipped + (grp * p.cg + c) * p.ocg + o0, om,
                          r[c - c0]);
}
#endif

/// The flipped kernels w'[g, c, o, T - 1 - tap] = w[g, o, c, tap] of input
/// channels [c0, c1) of group grp (taps flattened row-major, so reversing
/// them flips every dim).
void flipKernels(const ConvShape &p, const float *__restrict w,
                 float *__restrict flipped, int64_t grp, int64_t c0,
                 int64_t c1) {
  const int64_t T = p.taps();
  // 16 x 16 tiles of (output, input) channel pairs, so that both the reads
  // and the writes of a tile stay within a few cache lines per row.
  for (int64_t o0 = 0; o0 < p.ocg; o0 += 16) {
    const int64_t o1 = o0 + 16 < p.ocg ? o0 + 16 : p.ocg;
#if WEFT_HAVE_AVX512_KERNELS
    if (T == 1 && gemmUsesOwnKernels()) {
      transposeTile(p, w, flipped, grp, o0, c0, c1);
      continue;
    }
#endif
    for (int64_t c = c0; c < c1; ++c) {
      float *dst = flipped + ((grp * p.cg + c) * p.ocg + o0) * T;
      const float *src = w + ((grp * p.ocg + o0) * p.cg + c) * T;
      for (int64_t o = o0; o < o1; ++o, dst += T, src += p.cg * T) {
        if (T == 1)
          dst[0] = src[0];
        else if (T == 9) // 3x3: a constant trip count the compiler unrolls
          for (int64_t i = 0; i < 9; ++i)
            dst[i] = src[8 - i];
        else
          for (int64_t i = 0; i < T; ++i)
            dst[i] = src[T - 1 - i];
      }
    }
  }
}

} // namespace

/// Whether conv_grad_input of `p` is a conv (unit strides, padding no
/// wider than the kernel's span).
bool gradInputIsConv(const ConvShape &p) {
  for (int d = 0; d < WindowGeometry::kDims; ++d)
    if (p.g.stride[d] != 1 ||
        (p.g.kernel[d] - 1) * p.g.dilation[d] < p.g.padBegin[d])
      return false;
  return true;
}

/// dx as the conv of dy by the flipped kernels (see the top of the file).
void gradInputAsConv(const ConvShape &p, const float *dy, const float *w,
                     float *dx) {
  ConvShape t = p;
  for (int d = 0; d < WindowGeometry::kDims; ++d) {
    const int64_t span = (p.g.kernel[d] - 1) * p.g.dilation[d];
    t.g.in[d] = p.g.out[d];
    t.g.out[d] = p.g.in[d];
    t.g.padBegin[d] = span - p.g.padBegin[d];
    t.g.padEnd[d] = span > p.g.padEnd[d] ? span - p.g.padEnd[d] : 0;
  }
  t.channels = p.outChannels;
  t.outChannels = p.channels;
  t.cg = p.ocg;
  t.ocg = p.cg;
  const int64_t T = p.taps();
  float *flipped = scratch<float>(kOuterOperandSlot, p.outChannels * p.cg * T);
  // By blocks of 16 input channels, so that each read of w is a run of
  // 16 * T floats.
  const int64_t cBlocks = (p.cg + 15) / 16;
  parallelFor(p.groups * cBlocks, grainFor(16 * p.ocg * T),
              [&](int64_t b, int64_t e) {
                for (int64_t item = b; item < e; ++item) {
                  const int64_t c0 = item % cBlocks * 16;
                  flipKernels(p, w, flipped, item / cBlocks, c0,
                              c0 + 16 < p.cg ? c0 + 16 : p.cg);
                }
              });
  convForward(t, dy, flipped, nullptr, dx);
}

} // namespace cpu
} // namespace weft
