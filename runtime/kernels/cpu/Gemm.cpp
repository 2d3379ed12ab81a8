//===- Gemm.cpp - Single-threaded sgemm tiles for conv and matmul ---------===//
//
// The AVX-512 path: C is cut into tiles of MR <= 12 rows (the rows of A
// split as evenly as possible, so no tile is much shorter than the others)
// by 32 columns (16 for a last narrow one). Loop order: k blocks of up to
// kKBlock, then 32-column panels of B, then row tiles; one panel of B (k
// block x 32 floats) is thus reused from L1 by every row tile while the A
// block streams from L2. A transposed B is packed into a contiguous panel
// first (16x16 in-register transposes), and so is a B whose rows are a
// multiple of 4 KiB apart (they would all compete for one L1 set). Each tile
// keeps MR x 2 zmm accumulators over its k block, reads A in place (one
// broadcast per row and k; a transposed A has a tile's MR values of one k side
// by side) and adds the result to C (later k blocks) or to the bias (first
// block) on the way out.
//
// Zen 4 and Skylake-SP class cores sustain about one zmm FMA per cycle and
// pipe here, which these tiles reach within a few percent on L2-resident
// operands.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"
#include "Scratch.h"
#include "Simd512.h"

#include <atomic>
#include <cblas.h>
#include <cstring>

namespace weft {
namespace cpu {
namespace {

std::atomic<bool> gForceBlas{false};

/// Rows of C in one register tile at most, and the k block of one pass.
constexpr int kMaxTileRows = 12;
constexpr int64_t kKBlock = 512;
/// Scratch slot of the packed panels of B (slots 0-4 are the callers').
constexpr int kGemmScratchSlot = 5;
/// Rows of B a multiple of this many floats (4 KiB) apart all map to the
/// same L1 set; their panels are packed.
constexpr int64_t kAliasStride = 1024;

void initRows(int64_t m, int64_t n, float *c, int64_t ldc,
              const float *rowBias) {
  for (int64_t i = 0; i < m; ++i) {
    float *row = c + i * ldc;
    if (rowBias) {
      float b = rowBias[i];
      for (int64_t j = 0; j < n; ++j)
        row[j] = b;
    } else {
      std::memset(row, 0, static_cast<size_t>(n) * sizeof(float));
    }
  }
}

void blasGemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
              bool transA, const float *b, int64_t ldb, bool transB, float *c,
              int64_t ldc, const float *rowBias, bool accumulate) {
  if (!accumulate && rowBias)
    initRows(m, n, c, ldc, rowBias);
  float beta = accumulate || rowBias ? 1.0f : 0.0f;
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}

#if WEFT_HAVE_AVX512_KERNELS

using TileFn = void (*)(int64_t kc, const float *a, int64_t lda, const float *b,
                        int64_t ldb, float *c, int64_t ldc, __mmask16 last,
                        const float *rowBias, bool accumulate);

/// C[MR, 16*NV] tile; `last` masks the columns of the last vector. A is
/// read as a[i * lda + p], or a[p * lda + i] when kTransA.
template <int MR, int NV, bool kTransA>
WEFT_TARGET_AVX512 void tile(int64_t kc, const float *a, int64_t lda,
                             const float *b, int64_t ldb, float *c, int64_t ldc,
                             __mmask16 last, const float *rowBias,
                             bool accumulate) {
  __m512 acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v)
      acc[i][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    const float *bp = b + p * ldb;
    __m512 bv[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV - 1; ++v)
      bv[v] = _mm512_loadu_ps(bp + 16 * v);
    bv[NV - 1] = _mm512_maskz_loadu_ps(last, bp + 16 * (NV - 1));
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      __m512 ai = _mm512_set1_ps(kTransA ? a[p * lda + i] : a[i * lda + p]);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v)
        acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    float *ci = c + i * ldc;
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      __mmask16 mask = v == NV - 1 ? last : __mmask16(0xFFFF);
      __m512 r = acc[i][v];
      if (accumulate)
        r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mask, ci + 16 * v));
      else if (rowBias)
        r = _mm512_add_ps(r, _mm512_set1_ps(rowBias[i]));
      _mm512_mask_storeu_ps(ci + 16 * v, mask, r);
    }
  }
}

template <int MR> constexpr TileFn tileFor(int nv, bool transA) {
  return transA ? (nv == 1 ? &tile<MR, 1, true> : &tile<MR, 2, true>)
                : (nv == 1 ? &tile<MR, 1, false> : &tile<MR, 2, false>);
}

TileFn tileFn(int rows, int nv, bool transA) {
  switch (rows) {
  case 1:
    return tileFor<1>(nv, transA);
  case 2:
    return tileFor<2>(nv, transA);
  case 3:
    return tileFor<3>(nv, transA);
  case 4:
    return tileFor<4>(nv, transA);
  case 5:
    return tileFor<5>(nv, transA);
  case 6:
    return tileFor<6>(nv, transA);
  case 7:
    return tileFor<7>(nv, transA);
  case 8:
    return tileFor<8>(nv, transA);
  case 9:
    return tileFor<9>(nv, transA);
  case 10:
    return tileFor<10>(nv, transA);
  case 11:
    return tileFor<11>(nv, transA);
  default:
    return tileFor<12>(nv, transA);
  }
}

/// Copies columns [j, j + w) (w <= 32) and rows [k0, k1) of B into
/// dst[(p - k0) * width + (col - j)], width 16 or 32.
WEFT_TARGET_AVX512 void packPanel(const float *b, int64_t ldb, int64_t j,
                                  int64_t w, int64_t k0, int64_t k1, int width,
                                  float *dst) {
  const __mmask16 m0 = lanesBelow(w), m1 = lanesBelow(w - 16);
  const float *src = b + k0 * ldb + j;
  for (int64_t p = k0; p < k1; ++p, src += ldb, dst += width) {
    _mm512_storeu_ps(dst, _mm512_maskz_loadu_ps(m0, src));
    if (width == 32)
      _mm512_storeu_ps(dst + 16, _mm512_maskz_loadu_ps(m1, src + 16));
  }
}

/// Packs columns [j, j + w) (w <= 32) and rows [k0, k1) of op(B) = B^T,
/// with B stored [n][k], into dst[(p - k0) * width + (col - j)], width 16
/// or 32; columns past w are zero.
WEFT_TARGET_AVX512 void packTransposedPanel(const float *b, int64_t ldb,
                                            int64_t j, int64_t w, int64_t k0,
                                            int64_t k1, int width, float *dst) {
  for (int half = 0; half < width; half += 16) {
    const int64_t rows = w - half < 16 ? w - half : 16;
    const float *src = b + (j + half) * ldb;
    for (int64_t p = k0; p < k1; p += 16) {
      const __mmask16 m = lanesBelow(k1 - p);
      __m512 r[16];
#pragma GCC unroll 16
      for (int l = 0; l < 16; ++l)
        r[l] = l < rows ? _mm512_maskz_loadu_ps(m, src + l * ldb + p)
                        : _mm512_setzero_ps();
      transpose16(r);
      const int64_t count = k1 - p < 16 ? k1 - p : 16;
      float *d = dst + (p - k0) * width + half;
      for (int64_t i = 0; i < count; ++i)
        _mm512_storeu_ps(d + i * width, r[i]);
    }
  }
}

bool cpuHasAvx512() {
  static const bool has =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("bmi2");
  return has;
}

void ownGemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
             bool transA, const float *b, int64_t ldb, bool transB, float *c,
             int64_t ldc, const float *rowBias, bool accumulate) {
  // Row tiles: as few as fit kMaxTileRows, sizes differing by at most one.
  const int64_t tiles = (m + kMaxTileRows - 1) / kMaxTileRows;
  const int64_t base = m / tiles, extra = m % tiles;
  const int64_t kBlocks = (k + kKBlock - 1) / kKBlock;
  // B is packed panel by panel when transposed, and when its rows alias in
  // L1 and several row tiles reuse each panel.
  const bool pack = transB || (ldb % kAliasStride == 0 && tiles > 1);
  float *panel =
      pack ? scratch<float>(kGemmScratchSlot, 32 * (k / kBlocks + 1)) : nullptr;
  for (int64_t kb = 0; kb < kBlocks; ++kb) {
    const int64_t k0 = kb * k / kBlocks, k1 = (kb + 1) * k / kBlocks;
    const bool acc = accumulate || kb > 0;
    const float *bias = acc ? nullptr : rowBias;
    for (int64_t j = 0; j < n; j += 32) {
      const int64_t w = n - j < 32 ? n - j : 32;
      const int nv = w > 16 ? 2 : 1;
      const int64_t lastLanes = w - 16 * (nv - 1);
      const __mmask16 last = static_cast<__mmask16>((1u << lastLanes) - 1);
      const float *bj = b + k0 * ldb + j;
      int64_t bStride = ldb;
      if (pack) {
        if (transB)
          packTransposedPanel(b, ldb, j, w, k0, k1, 16 * nv, panel);
        else
          packPanel(b, ldb, j, w, k0, k1, 16 * nv, panel);
        bj = panel;
        bStride = 16 * nv;
      }
      // The next panel of a transposed B (usually on its way from memory)
      // is prefetched while the tiles of this one compute: its rows
      // [j', j' + 32) over [k0', k1'), a share of them before each tile.
      int64_t nj = j + 32, nk0 = k0, nk1 = k1;
      if (nj >= n) {
        nj = 0;
        nk0 = k1;
        nk1 = (kb + 2) * k / kBlocks;
      }
      const int64_t nw = !transB || nk0 >= k ? 0 : n - nj < 32 ? n - nj : 32;
      const int64_t lines = (nk1 - nk0 + 15) / 16;
      int64_t i0 = 0;
      for (int64_t t = 0; t < tiles; ++t) {
        for (int64_t r = t * nw / tiles; r < (t + 1) * nw / tiles; ++r)
          for (int64_t q = 0; q < lines; ++q)
            _mm_prefetch(reinterpret_cast<const char *>(b + (nj + r) * ldb +
                                                        nk0 + 16 * q),
                         _MM_HINT_T0);
        const int64_t rows = base + (t < extra ? 1 : 0);
        const float *ai = transA ? a + k0 * lda + i0 : a + i0 * lda + k0;
        tileFn(static_cast<int>(rows), nv,
               transA)(k1 - k0, ai, lda, bj, bStride, c + i0 * ldc + j, ldc,
                       last, bias ? bias + i0 : nullptr, acc);
        i0 += rows;
      }
    }
  }
}

#endif // WEFT_HAVE_AVX512_KERNELS

} // namespace

bool gemmUsesOwnKernels() {
#if WEFT_HAVE_AVX512_KERNELS
  return cpuHasAvx512() && !gForceBlas.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

void gemmForceBlasForTesting(bool force) {
  gForceBlas.store(force, std::memory_order_relaxed);
}

void gemmTile(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
              bool transA, const float *b, int64_t ldb, bool transB, float *c,
              int64_t ldc, const float *rowBias, bool accumulate) {
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0) {
    if (!accumulate)
      initRows(m, n, c, ldc, rowBias);
    return;
  }
#if WEFT_HAVE_AVX512_KERNELS
  if (gemmUsesOwnKernels())
    return ownGemm(m, n, k, a, lda, transA, b, ldb, transB, c, ldc, rowBias,
                   accumulate);
#endif
  blasGemm(m, n, k, a, lda, transA, b, ldb, transB, c, ldc, rowBias,
           accumulate);
}

} // namespace cpu
} // namespace weft
