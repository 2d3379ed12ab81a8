//===- Conv.cpp - conv kernel ---------------------------------------------===//
//
// y[n, g*OCg + o] = sum over (c, taps) w[g*OCg + o, c, taps] x[n, g*Cg + c, ..]
// for 1-D to 3-D convolutions with groups, strides, pads and dilations.
//
// Strategy (measured on 2-core AVX-512 Zen 4 with ResNet-18; see
// bench/README.md):
// - One thread pool. Every gemm runs single-threaded through gemmTile
//   (Gemm.h: weft's AVX-512 register tiles, else OpenBLAS pinned to one
//   thread), and the kernels split the work over weft's pool themselves, so
//   OpenBLAS's threads never compete with the pool for the cores.
// - 3x3 stride-1 convs without groups go to Winograd (Winograd.h) when its
//   cost model beats the direct method (most of a CNN's multiply-adds: 2.25x
//   to 4x fewer of them).
// - Depthwise convs (one input channel per group) are computed directly, one
//   output plane per task: their gemms would be degenerate.
// - Taps that read only padding for every output (a 3x3 "same" conv on 1x1
//   images has eight) are dropped first (ConvTaps.h).
// - Every other conv is, per (image, group) item, the gemm
//     y_g[OCg, P] = w_g[OCg, K] x cols[K, P] (+ bias),  K = Cg * taps,
//   with vectors along the P output positions (the large dimension), cols
//   the im2col matrix and the bias initializing the result (no extra pass).
//   With many columns (items x P), the columns of all items are cut into
//   contiguous ranges over the pool: a thread builds the im2col block of its
//   own columns (a few hundred KiB, k-blocked) in its own scratch and
//   multiplies all of w_g by it while it is in L2. With few columns (late,
//   low-resolution stages), one shared im2col matrix is built in parallel and
//   the output channels are split over the pool; with fewer than
//   kBatchedPositions positions, several images share that matrix side by
//   side, so one product reads the weights for all of them (at 1x1 each
//   image alone would be a matrix-vector product). When the columns would
//   waste vector lanes (7x7 = 49 of 64) the product is turned around,
//   y_g^T = cols^T x w_g^T, with vectors along output channels.
// - im2col rows are masked vector copies of "phase planes" of the input
//   (usesPhasePlanes) when the geometry allows, else copied output row by
//   output row. 1x1 stride-1 unpadded convs use x itself as cols; other 1x1
//   convs gather only the pixels they read.
//
//===----------------------------------------------------------------------===//

#include "ConvForward.h"
#include "ConvTaps.h"
#include "Gemm.h"
#include "Parallel.h"
#include "RowOps.h"
#include "Scratch.h"
#include "Simd512.h"
#include "Widen.h"
#include "Winograd.h"

#include <cstring>

using namespace weft;
using namespace weft::cpu;

namespace {

/// Columns of one private im2col block, and floats of it at most.
constexpr int64_t kBlockColumns = 256;
constexpr int64_t kBlockFloats = int64_t(128) << 10;
/// Floats of one shared im2col block at most.
constexpr int64_t kSharedFloats = int64_t(1) << 20;
/// Columns per thread from which one image's columns are split over the
/// pool rather than its output channels.
constexpr int64_t kSplitColumnsPerThread = 256;
/// Output positions per image below which images are multiplied together
/// (convImages), and the columns of one such product at most.
constexpr int64_t kBatchedPositions = 64;
constexpr int64_t kBatchedColumns = 512;
/// Multiply-adds below which a range of work is not worth a thread.
constexpr int64_t kMinParallelMacs = int64_t(1) << 17;

struct ConvProblem : ConvShape {
  const float *x, *w, *bias;
  float *y;
  // Phase planes (see buildPhasePlanes), when im2col reads them.
  const float *planes = nullptr;
  int64_t phaseH = 0, phaseW = 0;

  int64_t depth() const { return cg * taps(); } // K of the gemm
  int64_t positions() const { return g.outSize(); }
  // Operands of item (image, group) = item / groups, item % groups.
  const float *input(int64_t item) const {
    return x + (item / groups * channels + item % groups * cg) * g.inSize();
  }
  const float *weights(int64_t item) const {
    return w + item % groups * ocg * depth();
  }
  const float *biasOf(int64_t item) const {
    return bias ? bias + item % groups * ocg : nullptr;
  }
  float *output(int64_t item) const {
    return y +
           (item / groups * outChannels + item % groups * ocg) * positions();
  }
};

/// Row stride of an im2col block of `cols` columns: a multiple of 16
/// floats, but not of 128 (rows 512 bytes apart alias in L1).
int64_t paddedColumns(int64_t cols) {
  int64_t ld = (cols + 15) / 16 * 16;
  return ld % 128 == 0 ? ld + 16 : ld;
}

/// One segment of an im2col row: dst[o - o0] for outputs o in [o0, o1) of
/// one output row is xrow[o * sw + off] when o is in [lo, hi) (the outputs
/// whose tap lies inside the input row), else 0.
struct SegmentScalar {
  void operator()(float *dst, const float *xrow, int64_t o0, int64_t o1,
                  int64_t lo, int64_t hi, int64_t sw, int64_t off) const {
    int64_t a = lo < o0 ? o0 : lo > o1 ? o1 : lo;
    int64_t e = hi < a ? a : hi > o1 ? o1 : hi;
    for (int64_t o = o0; o < a; ++o)
      dst[o - o0] = 0.0f;
    if (sw == 1 && e > a)
      std::memcpy(dst + (a - o0), xrow + a + off,
                  static_cast<size_t>(e - a) * sizeof(float));
    else
      for (int64_t o = a; o < e; ++o)
        dst[o - o0] = xrow[o * sw + off];
    for (int64_t o = e; o < o1; ++o)
      dst[o - o0] = 0.0f;
  }
};

#if WEFT_HAVE_AVX512_KERNELS
/// SegmentScalar with 16-wide masked loads: padding lanes load as zero.
/// Strides 1 and 2 are vectorized.
struct SegmentAvx512 {
  WEFT_TARGET_AVX512 void operator()(float *dst, const float *xrow, int64_t o0,
                                     int64_t o1, int64_t lo, int64_t hi,
                                     int64_t sw, int64_t off) const {
    if (sw == 1) {
      for (int64_t o = o0; o < o1; o += 16) {
        __mmask16 store = lanesBelow(o1 - o);
        __mmask16 valid = store & lanesBelow(hi - o) & ~lanesBelow(lo - o);
        __m512 v = _mm512_maskz_loadu_ps(valid, xrow + (o + off));
        _mm512_mask_storeu_ps(dst + (o - o0), store, v);
      }
    } else if (sw == 2) {
      const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18,
                                             20, 22, 24, 26, 28, 30);
      for (int64_t o = o0; o < o1; o += 16) {
        __mmask16 store = lanesBelow(o1 - o);
        __mmask16 valid = store & lanesBelow(hi - o) & ~lanesBelow(lo - o);
        // Output lane l reads source element 2l of the 32 loaded.
        unsigned src = _pdep_u32(valid, 0x55555555u);
        const float *s = xrow + (2 * o + off);
        __m512 a = _mm512_maskz_loadu_ps(static_cast<__mmask16>(src), s);
        __m512 b =
            _mm512_maskz_loadu_ps(static_cast<__mmask16>(src >> 16), s + 16);
        _mm512_mask_storeu_ps(dst + (o - o0), store,
                              _mm512_permutex2var_ps(a, even, b));
      }
    } else {
      SegmentScalar()(dst, xrow, o0, o1, lo, hi, sw, off);
    }
  }
};
#endif

/// Rows [r0, r1) and columns (output positions) [p0, p1) of the im2col
/// matrix of one group's input `xg` into dst, `ld` floats per row. Row r is
/// (channel, kd, kh, kw).
template <class Segment>
inline __attribute__((always_inline)) void
im2colImpl(const WindowGeometry &g, const float *xg, int64_t r0, int64_t r1,
           int64_t p0, int64_t p1, float *dst, int64_t ld, Segment segment) {
  const int64_t kd = g.kernel[0], kh = g.kernel[1], kw = g.kernel[2];
  const int64_t ow = g.out[2], oh = g.out[1];
  const int64_t inW = g.in[2], inHW = g.in[1] * g.in[2];
  const int64_t sw = g.stride[2];
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t tw = r % kw;
    const int64_t th = (r / kw) % kh;
    const int64_t td = (r / (kw * kh)) % kd;
    const int64_t c = r / (kw * kh * kd);
    const float *xc = xg + c * g.inSize();
    int64_t wLo, wHi;
    g.validOutputs(2, tw, wLo, wHi);
    const int64_t off = tw * g.dilation[2] - g.padBegin[2];
    float *row = dst + (r - r0) * ld;
    int64_t orow = p0 / ow, o = p0 % ow;
    for (int64_t p = p0; p < p1; ++orow) {
      const int64_t o1 = o + (p1 - p) < ow ? o + (p1 - p) : ow;
      const int64_t id =
          orow / oh * g.stride[0] - g.padBegin[0] + td * g.dilation[0];
      const int64_t ih =
          orow % oh * g.stride[1] - g.padBegin[1] + th * g.dilation[1];
      float *seg = row + (p - p0);
      if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1])
        std::memset(seg, 0, static_cast<size_t>(o1 - o) * sizeof(float));
      else
        segment(seg, xc + id * inHW + ih * inW, o, o1, wLo, wHi, sw, off);
      p += o1 - o;
      o = 0;
    }
  }
}

void im2colScalar(const WindowGeometry &g, const float *xg, int64_t r0,
                  int64_t r1, int64_t p0, int64_t p1, float *dst, int64_t ld) {
  im2colImpl(g, xg, r0, r1, p0, p1, dst, ld, SegmentScalar());
}

#if WEFT_HAVE_AVX512_KERNELS
WEFT_TARGET_AVX512 void im2colAvx512(const WindowGeometry &g, const float *xg,
                                     int64_t r0, int64_t r1, int64_t p0,
                                     int64_t p1, float *dst, int64_t ld) {
  im2colImpl(g, xg, r0, r1, p0, p1, dst, ld, SegmentAvx512());
}
#endif

/// Phase planes. A 2-D conv with strides (sh, sw) reads, for tap (th, tw),
/// input pixels (oh * sh + th', ow * sw + tw') with th' = th * dilation -
/// padTop (likewise tw'). Splitting each input plane into sh * sw planes by
/// the residues of the row and column indices,
///   plane[a][b][i][j] = x[a + sh * i][b + sw * j]   (0 past the input),
/// of phaseH x phaseW = ceil(inH / sh) x ceil(inW / sw), makes every row of
/// the im2col matrix a shifted copy of one plane when phaseW == outW (true of
/// "same"-padded stride-1 convs and of the usual stride-2 ones):
///   cols[(c, th, tw)][p] = plane_c[a][b][p + dh * phaseW + dw],
/// with th' = dh * sh + a, tw' = dw * sw + b, masked to 0 where oh + dh or
/// ow + dw leaves the plane. Rows then take a few masked vector copies each
/// instead of a loop over output rows. Stride 1 needs no planes (x is its
/// own plane).
bool usesPhasePlanes(const ConvProblem &p) {
  const WindowGeometry &g = p.g;
  // Building strided planes copies the input once; worth it when im2col
  // reads each input pixel at least once (kernel not smaller than stride).
  return gemmUsesOwnKernels() && g.in[0] == 1 && g.out[0] == 1 &&
         g.kernel[0] == 1 &&
         (g.in[2] + g.stride[2] - 1) / g.stride[2] == g.out[2] &&
         g.kernel[1] * g.kernel[2] >= g.stride[1] * g.stride[2];
}

/// Floor division and its remainder (b > 0).
inline int64_t floorDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

#if WEFT_HAVE_AVX512_KERNELS
/// Planes of input planes [q0, q1) (image * channels + channel) of x.
WEFT_TARGET_AVX512 void buildPhasePlanes(const ConvProblem &p, float *planes,
                                         int64_t q0, int64_t q1) {
  const WindowGeometry &g = p.g;
  const int64_t sh = g.stride[1], sw = g.stride[2];
  const int64_t inH = g.in[1], inW = g.in[2], ph = p.phaseH, pw = p.phaseW;
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20,
                                         22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (int64_t q = q0; q < q1; ++q) {
    const float *x = p.x + q * inH * inW;
    float *out = planes + q * sh * sw * ph * pw;
    for (int64_t a = 0; a < sh; ++a)
      for (int64_t i = 0; i < ph; ++i) {
        const int64_t row = a + sh * i;
        float *dst0 = out + (a * sw * ph + i) * pw; // phase (a, 0)
        if (row >= inH) {
          for (int64_t b = 0; b < sw; ++b)
            std::memset(dst0 + b * ph * pw, 0,
                        static_cast<size_t>(pw) * sizeof(float));
          continue;
        }
        const float *src = x + row * inW;
        int64_t j = 0;
        if (sw == 2) {
          for (; j + 16 <= pw && 2 * j + 32 <= inW; j += 16) {
            __m512 lo = _mm512_loadu_ps(src + 2 * j);
            __m512 hi = _mm512_loadu_ps(src + 2 * j + 16);
            _mm512_storeu_ps(dst0 + j, _mm512_permutex2var_ps(lo, even, hi));
            _mm512_storeu_ps(dst0 + ph * pw + j,
                             _mm512_permutex2var_ps(lo, odd, hi));
          }
        }
        for (; j < pw; ++j)
          for (int64_t b = 0; b < sw; ++b) {
            const int64_t col = b + sw * j;
            dst0[b * ph * pw + j] = col < inW ? src[col] : 0.0f;
          }
      }
  }
}

/// im2col from phase planes (see usesPhasePlanes): rows [r0, r1), columns
/// [p0, p1) of one item into dst (`ld` floats per row).
WEFT_TARGET_AVX512 void im2colPhases(const ConvProblem &p, int64_t item,
                                     int64_t r0, int64_t r1, int64_t p0,
                                     int64_t p1, float *dst, int64_t ld) {
  const WindowGeometry &g = p.g;
  const int64_t kh = g.kernel[1], kw = g.kernel[2];
  const int64_t sh = g.stride[1], sw = g.stride[2];
  const int64_t ph = p.phaseH, pw = p.phaseW, ow = g.out[2];
  const int64_t planeSize = sh * sw * ph * pw;
  const float *planes =
      p.planes +
      (item / p.groups * p.channels + item % p.groups * p.cg) * planeSize;
  // Valid-lane masks of every 16-column vector: per tap row (oh + dh inside
  // the plane) and per tap column (ow + dw inside it), from the output row
  // and column of each column.
  const int64_t nv = (p1 - p0 + 15) / 16;
  uint16_t *masks = scratch<uint16_t>(3, (kh + kw) * nv);
  uint16_t *rowMasks = masks, *colMasks = masks + kh * nv;
  int32_t *pos = scratch<int32_t>(4, 32 * nv);
  for (int64_t q = p0, oy = p0 / ow, ox = p0 % ow, i = 0; i < 16 * nv;
       ++i, ++q) {
    pos[i] = q < p1 ? static_cast<int32_t>(oy) : -(1 << 30);
    pos[16 * nv + i] = q < p1 ? static_cast<int32_t>(ox) : -(1 << 30);
    if (++ox == ow) {
      ox = 0;
      ++oy;
    }
  }
  for (int64_t t = 0; t < kh + kw; ++t) {
    const bool isRow = t < kh;
    const int64_t tap = isRow ? t : t - kh;
    const int64_t d = isRow ? floorDiv(tap * g.dilation[1] - g.padBegin[1], sh)
                            : floorDiv(tap * g.dilation[2] - g.padBegin[2], sw);
    // pos + d in [0, extent)  <=>  pos in [-d, extent - d).
    const __m512i lo = _mm512_set1_epi32(static_cast<int32_t>(-d));
    const __m512i hi =
        _mm512_set1_epi32(static_cast<int32_t>((isRow ? ph : pw) - d));
    const int32_t *at = pos + (isRow ? 0 : 16 * nv);
    for (int64_t v = 0; v < nv; ++v) {
      const __m512i o = _mm512_loadu_si512(at + 16 * v);
      masks[t * nv + v] =
          _mm512_cmpge_epi32_mask(o, lo) & _mm512_cmplt_epi32_mask(o, hi);
    }
  }
  const __mmask16 lastStore = lanesBelow(p1 - p0 - 16 * (nv - 1));
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t tw = r % kw, th = (r / kw) % kh, c = r / (kw * kh);
    const int64_t oy = th * g.dilation[1] - g.padBegin[1];
    const int64_t ox = tw * g.dilation[2] - g.padBegin[2];
    const int64_t dh = floorDiv(oy, sh), dw = floorDiv(ox, sw);
    const int64_t a = oy - dh * sh, b = ox - dw * sw;
    const float *src =
        planes + c * planeSize + (a * sw + b) * ph * pw + dh * pw + dw + p0;
    const uint16_t *rm = rowMasks + th * nv, *cm = colMasks + tw * nv;
    float *row = dst + (r - r0) * ld;
    for (int64_t v = 0; v < nv; ++v) {
      const __mmask16 m = static_cast<__mmask16>(rm[v] & cm[v]);
      _mm512_mask_storeu_ps(row + 16 * v, v == nv - 1 ? lastStore : 0xFFFF,
                            _mm512_maskz_loadu_ps(m, src + 16 * v));
    }
  }
}
#endif

/// Rows [r0, r1), columns [p0, p1) of the im2col matrix of one item.
void im2col(const ConvProblem &p, int64_t item, int64_t r0, int64_t r1,
            int64_t p0, int64_t p1, float *dst, int64_t ld) {
#if WEFT_HAVE_AVX512_KERNELS
  if (p.planes)
    return im2colPhases(p, item, r0, r1, p0, p1, dst, ld);
  if (gemmUsesOwnKernels())
    return im2colAvx512(p.g, p.input(item), r0, r1, p0, p1, dst, ld);
#endif
  im2colScalar(p.g, p.input(item), r0, r1, p0, p1, dst, ld);
}

/// Columns [c0, c1) of one item on the calling thread alone.
void convColumns(const ConvProblem &p, int64_t item, int64_t c0, int64_t c1) {
  const int64_t k = p.depth(), n = p.positions();
  const float *xg = p.input(item);
  const float *wg = p.weights(item);
  const float *bias = p.biasOf(item);
  float *yg = p.output(item);
  if (p.pointwise()) {
    gemmTile(p.ocg, c1 - c0, k, wg, k, xg + c0, n, yg + c0, n, bias, false);
    return;
  }
  const int64_t blocks = (c1 - c0 + kBlockColumns - 1) / kBlockColumns;
  // Column blocks are multiples of 16 but the last, so that only the last
  // tile of the range has a partial vector.
  const int64_t width = ((c1 - c0 + blocks - 1) / blocks + 15) / 16 * 16;
  const int64_t ld = paddedColumns(width);
  // k blocks sized for the widest block, so that they (and each output's
  // order of additions) do not depend on how the pool cut the columns.
  int64_t rows = kBlockFloats / paddedColumns(kBlockColumns);
  const int64_t kBlocks = (k + rows - 1) / (rows < 1 ? 1 : rows);
  rows = (k + kBlocks - 1) / kBlocks;
  float *cols = scratch<float>(0, rows * ld);
  for (int64_t b0 = c0; b0 < c1; b0 += width) {
    const int64_t b1 = b0 + width < c1 ? b0 + width : c1;
    for (int64_t k0 = 0; k0 < k; k0 += rows) {
      const int64_t k1 = k0 + rows < k ? k0 + rows : k;
      im2col(p, item, k0, k1, b0, b1, cols, ld);
      gemmTile(p.ocg, b1 - b0, k1 - k0, wg + k0, k, cols, ld, yg + b0, n, bias,
               k0 > 0);
    }
  }
}

/// Columns [u0 * 16, u1 * 16) of the concatenated columns of all items
/// (each item's positions padded to a multiple of 16).
void convColumnRange(const ConvProblem &p, int64_t u0, int64_t u1) {
  const int64_t n = p.positions();
  const int64_t perItem = (n + 15) / 16;
  for (int64_t u = u0; u < u1;) {
    const int64_t item = u / perItem;
    const int64_t first = u % perItem;
    const int64_t last =
        u1 - item * perItem < perItem ? u1 - item * perItem : perItem;
    const int64_t c1 = last * 16 < n ? last * 16 : n;
    convColumns(p, item, first * 16, c1);
    u = item * perItem + last;
  }
}

/// Share of the lanes of 16-float vectors that e values fill.
double laneUse(int64_t e) { return double(e) / double((e + 15) / 16 * 16); }

/// Whether y_g^T = cols^T x w_g^T (vectors along output channels) beats
/// y_g = w_g x cols (vectors along positions) for one item: it fills more
/// lanes when the positions are few (7x7: 49 of 64), but transposes w_g
/// into panels, about 5 / n of the multiply-adds' time.
bool transposedPays(int64_t ocg, int64_t n) {
  return laneUse(ocg) * (1.0 - 5.0 / double(n)) > laneUse(n) + 0.05;
}

/// Rows [o0, o1) of y[o][q] = yt[q][o] + bias[o] (n values of q).
void untranspose(const float *yt, const float *bias, float *y, int64_t n,
                 int64_t ocg, int64_t o0, int64_t o1) {
  for (int64_t o = o0; o < o1; ++o) {
    const float b = bias ? bias[o] : 0.0f;
    for (int64_t q = 0; q < n; ++q)
      y[o * n + q] = yt[q * ocg + o] + b;
  }
}

#if WEFT_HAVE_AVX512_KERNELS
WEFT_TARGET_AVX512 void untransposeAvx512(const float *yt, const float *bias,
                                          float *y, int64_t n, int64_t ocg,
                                          int64_t o0, int64_t o1) {
  for (int64_t ob = o0; ob < o1; ob += 16) {
    const int64_t lanes = o1 - ob < 16 ? o1 - ob : 16;
    const __mmask16 om = lanesBelow(lanes);
    for (int64_t q0 = 0; q0 < n; q0 += 16) {
      const int64_t rows = n - q0 < 16 ? n - q0 : 16;
      __m512 r[16];
#pragma GCC unroll 16
      for (int l = 0; l < 16; ++l)
        r[l] = l < rows ? _mm512_maskz_loadu_ps(om, yt + (q0 + l) * ocg + ob)
                        : _mm512_setzero_ps();
      transpose16(r);
      const __mmask16 qm = lanesBelow(rows);
      for (int64_t l = 0; l < lanes; ++l) {
        const __m512 b = _mm512_set1_ps(bias ? bias[ob + l] : 0.0f);
        _mm512_mask_storeu_ps(y + (ob + l) * n + q0, qm,
                              _mm512_add_ps(r[l], b));
      }
    }
  }
}
#endif

/// Images [n0, n1) of group `grp` with all threads: one shared im2col
/// matrix of their columns side by side (image by image), then the gemm
/// y'[OCg, images x P] = w_g x cols with the output channels split over the
/// pool. With few positions per image, several images make one product, so
/// the weights are read once for all of them rather than once per image (at
/// P = 1 each per-image product would be a matrix-vector product). When the
/// columns would waste vector lanes, the product runs turned around with
/// vectors along output channels (transposedPays). y' is then spread into y
/// with the bias, except for one image in the plain orientation, whose y'
/// is its part of y.
void convImages(const ConvProblem &p, int64_t grp, int64_t n0, int64_t n1) {
  const int64_t k = p.depth(), P = p.positions(), ocg = p.ocg;
  const int64_t cols = (n1 - n0) * P;
  const float *wg = p.weights(grp);
  const float *bias = p.biasOf(grp);
  const bool transposed = transposedPays(ocg, cols);
  const bool inPlace = n1 - n0 == 1 && !transposed;
  const int64_t units = transposed ? (ocg + 15) / 16 : ocg;
  const int64_t unit = transposed ? 16 : 1;
  const int threads = numThreads();
  int64_t grain = (units + threads - 1) / threads;
  if (grain * unit < 8)
    grain = (8 + unit - 1) / unit;
  // One pointwise image is its own im2col matrix.
  const bool direct = n1 - n0 == 1 && p.pointwise();
  const int64_t ld = direct ? P : paddedColumns(cols);
  int64_t rows = direct ? k : kSharedFloats / ld;
  const int64_t kBlocks = (k + rows - 1) / (rows < 1 ? 1 : rows);
  rows = (k + kBlocks - 1) / kBlocks;
  float *buffer = direct ? nullptr : scratch<float>(0, rows * ld);
  // y' as [OCg, cols], or its transpose [cols, OCg].
  float *out =
      inPlace ? p.output(n0 * p.groups + grp) : scratch<float>(1, ocg * cols);
  for (int64_t k0 = 0; k0 < k; k0 += rows) {
    const int64_t k1 = k0 + rows < k ? k0 + rows : k;
    const float *colsAt =
        direct ? p.input(n0 * p.groups + grp) + k0 * P : buffer;
    if (!direct)
      parallelFor(k1 - k0, grainFor(cols), [&](int64_t r0, int64_t r1) {
        for (int64_t n = n0; n < n1; ++n) {
          float *dst = buffer + r0 * ld + (n - n0) * P;
          if (!p.pointwise()) {
            im2col(p, n * p.groups + grp, k0 + r0, k0 + r1, 0, P, dst, ld);
            continue;
          }
          // Row r of the columns is input channel r of each image.
          const float *x = p.input(n * p.groups + grp);
          for (int64_t r = r0; r < r1; ++r)
            std::memcpy(dst + (r - r0) * ld, x + (k0 + r) * P,
                        static_cast<size_t>(P) * sizeof(float));
        }
      });
    parallelFor(units, grain, [&](int64_t u0, int64_t u1) {
      const int64_t m0 = u0 * unit, m1 = u1 * unit < ocg ? u1 * unit : ocg;
      if (transposed)
        gemmTile(cols, m1 - m0, k1 - k0, colsAt, ld, true, wg + m0 * k + k0, k,
                 true, out + m0, ocg, nullptr, k0 > 0);
      else
        gemmTile(m1 - m0, cols, k1 - k0, wg + m0 * k + k0, k, colsAt, ld,
                 out + m0 * cols, cols, inPlace && bias ? bias + m0 : nullptr,
                 k0 > 0);
    });
  }
  if (inPlace)
    return;
  parallelFor(n1 - n0, grainFor(ocg * P), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      float *y = p.output((n0 + i) * p.groups + grp);
      if (!transposed) {
        for (int64_t o = 0; o < ocg; ++o) {
          const float add = bias ? bias[o] : 0.0f;
          for (int64_t q = 0; q < P; ++q)
            y[o * P + q] = out[o * cols + i * P + q] + add;
        }
        continue;
      }
#if WEFT_HAVE_AVX512_KERNELS
      if (gemmUsesOwnKernels()) {
        untransposeAvx512(out + i * P * ocg, bias, y, P, ocg, 0, ocg);
        continue;
      }
#endif
      untranspose(out + i * P * ocg, bias, y, P, ocg, 0, ocg);
    }
  });
}

/// Depthwise planes [p0, p1) of small images: each output sums its taps
/// through `offsets` (offsets[t * P + q]: where tap t of output q reads in
/// the input plane, -1 in the padding), in tap order as depthwisePlane.
void depthwiseSmallPlanes(const ConvProblem &p, const int64_t *offsets,
                          int64_t p0, int64_t p1) {
  const WindowGeometry &g = p.g;
  const int64_t T = p.taps(), P = g.outSize();
  for (int64_t plane = p0; plane < p1; ++plane) {
    const int64_t n = plane / p.outChannels, oc = plane % p.outChannels;
    const float *xs = p.x + (n * p.channels + oc / p.ocg) * g.inSize();
    const float *w = p.w + oc * T;
    float *y = p.y + plane * P;
    const float b = p.bias ? p.bias[oc] : 0.0f;
    for (int64_t q = 0; q < P; ++q) {
      float acc = b;
      for (int64_t t = 0; t < T; ++t) {
        const int64_t at = offsets[t * P + q];
        if (at >= 0)
          acc += w[t] * xs[at];
      }
      y[q] = acc;
    }
  }
}

/// depthwisePlane with unit strides and dilations: x goes into a
/// zero-padded plane wp = out[2] + kw - 1 wide, and the output into rows of
/// the same stride, so that each tap is one axpy over the whole plane
/// (output (oh, ow) reads tap (th, tw) at padded offset (oh + th) * wp + ow
/// + tw; the columns past out[2] collect products that are dropped). Small
/// images' rows are too short for an axpy per row and tap to pay.
void depthwisePaddedPlane(const ConvProblem &p, int64_t plane, float *buf) {
  const WindowGeometry &g = p.g;
  const int64_t n = plane / p.outChannels, oc = plane % p.outChannels;
  const float *xs = p.x + (n * p.channels + oc / p.ocg) * g.inSize();
  const float *wp = p.w + oc * p.taps();
  const int64_t kh = g.kernel[1], kw = g.kernel[2];
  const int64_t oh = g.out[1], ow = g.out[2];
  const int64_t width = ow + kw - 1, hp = oh + kh;
  float *xp = buf, *acc = buf + hp * width;
  padPlane(g, xs, xp, width, hp);
  const float b = p.bias ? p.bias[oc] : 0.0f;
  for (int64_t i = 0; i < oh * width; ++i)
    acc[i] = b;
  for (int64_t t = 0; t < kh * kw; ++t)
    axpyRow(acc, xp + t / kw * width + t % kw, 1, wp[t], oh * width);
  float *yp = p.y + plane * g.outSize();
  for (int64_t r = 0; r < oh; ++r)
    std::memcpy(yp + r * ow, acc + r * width,
                static_cast<size_t>(ow) * sizeof(float));
}

/// Depthwise (one input channel per group), 1-D or 2-D: output plane
/// (n, oc) reads input plane (n, oc / ocg).
void depthwisePlane(const ConvProblem &p, int64_t plane) {
  const WindowGeometry &g = p.g;
  const int64_t n = plane / p.outChannels, oc = plane % p.outChannels;
  const int64_t ic = oc / p.ocg;
  const float *xp = p.x + (n * p.channels + ic) * g.inSize();
  const float *wp = p.w + oc * p.taps();
  float *yp = p.y + plane * g.outSize();
  const int64_t oh = g.out[1], ow = g.out[2], inW = g.in[2];
  const int64_t sh = g.stride[1], sw = g.stride[2];
  const float b = p.bias ? p.bias[oc] : 0.0f;
  for (int64_t i = 0; i < oh * ow; ++i)
    yp[i] = b;
  for (int64_t th = 0; th < g.kernel[1]; ++th) {
    int64_t hLo, hHi;
    g.validOutputs(1, th, hLo, hHi);
    for (int64_t tw = 0; tw < g.kernel[2]; ++tw) {
      int64_t wLo, wHi;
      g.validOutputs(2, tw, wLo, wHi);
      if (wLo >= wHi)
        continue;
      const float wv = wp[th * g.kernel[2] + tw];
      const int64_t wOff = wLo * sw + tw * g.dilation[2] - g.padBegin[2];
      for (int64_t y = hLo; y < hHi; ++y) {
        int64_t ih = y * sh - g.padBegin[1] + th * g.dilation[1];
        axpyRow(yp + y * ow + wLo, xp + ih * inW + wOff, sw, wv, wHi - wLo);
      }
    }
  }
}

} // namespace

void weft::cpu::convForward(const ConvShape &shape, const float *x,
                            const float *w, const float *bias, float *y) {
  ConvProblem p;
  static_cast<ConvShape &>(p) = shape;
  p.x = x;
  p.w = w;
  p.bias = bias;
  p.y = y;

  p.w = dropDeadTaps(p, p.w);

  const int threads = numThreads();
  if (p.cg == 1 && p.g.kernel[0] == 1 && p.g.in[0] == 1 && p.g.out[0] == 1 &&
      p.g.padBegin[0] == 0) {
    const WindowGeometry &g = p.g;
    int64_t planes = p.batch * p.outChannels;
    if (g.outSize() <= kSmallPlane) {
      const int64_t T = p.taps(), P = g.outSize();
      int64_t *offsets = scratch<int64_t>(kTableSlot, T * P);
      tapOffsetTable(g, offsets);
      parallelFor(planes, grainFor(T * P), [&](int64_t b, int64_t e) {
        depthwiseSmallPlanes(p, offsets, b, e);
      });
      return;
    }
    const bool padded = g.stride[1] == 1 && g.stride[2] == 1 &&
                        g.dilation[1] == 1 && g.dilation[2] == 1;
    const int64_t bufFloats =
        (2 * g.out[1] + g.kernel[1]) * (g.out[2] + g.kernel[2] - 1);
    parallelFor(planes, grainFor(p.g.outSize() * p.taps()),
                [&](int64_t begin, int64_t end) {
                  float *buf = padded ? scratch<float>(0, bufFloats) : nullptr;
                  for (int64_t i = begin; i < end; ++i)
                    if (padded)
                      depthwisePaddedPlane(p, i, buf);
                    else
                      depthwisePlane(p, i);
                });
    return;
  }

  const WindowGeometry &g = p.g;
  if (p.groups == 1 && g.in[0] == 1 && g.out[0] == 1 && g.kernel[0] == 1 &&
      g.kernel[1] == 3 && g.kernel[2] == 3 && g.stride[1] == 1 &&
      g.stride[2] == 1 && g.dilation[1] == 1 && g.dilation[2] == 1 &&
      g.padBegin[0] == 0) {
    Conv3x3 c{
        p.batch,  p.channels,    p.outChannels, g.in[1], g.in[2], g.out[1],
        g.out[2], g.padBegin[1], g.padBegin[2], p.x,     p.w,     p.bias,
        p.y};
    if (int m = winogradTileSize(c)) {
      winogradConv3x3(c, m);
      return;
    }
  }

  const int64_t items = p.batch * p.groups;
  const int64_t n = p.positions();
#if WEFT_HAVE_AVX512_KERNELS
  if (!p.pointwise() && usesPhasePlanes(p)) {
    p.phaseH = (g.in[1] + g.stride[1] - 1) / g.stride[1];
    p.phaseW = g.out[2];
    if (g.stride[1] == 1 && g.stride[2] == 1) {
      p.planes = p.x;
    } else {
      const int64_t planeFloats =
          g.stride[1] * g.stride[2] * p.phaseH * p.phaseW;
      float *planes = scratch<float>(2, p.batch * p.channels * planeFloats);
      parallelFor(
          p.batch * p.channels, grainFor(planeFloats),
          [&](int64_t q0, int64_t q1) { buildPhasePlanes(p, planes, q0, q1); });
      p.planes = planes;
    }
  }
#endif
  if (n < kBatchedPositions && p.batch > 1) {
    // Few positions: images side by side, in chunks of at most
    // kBatchedColumns columns.
    const int64_t chunk = n >= kBatchedColumns ? 1 : kBatchedColumns / n;
    for (int64_t grp = 0; grp < p.groups; ++grp)
      for (int64_t n0 = 0; n0 < p.batch; n0 += chunk)
        convImages(p, grp, n0, n0 + chunk < p.batch ? n0 + chunk : p.batch);
  } else if (transposedPays(p.ocg, n)) {
    // Few positions: items one after another, each split over the pool, or
    // (with enough items) whole items per thread.
    if (items >= threads)
      parallelFor(items, 1, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i)
          convImages(p, i % p.groups, i / p.groups, i / p.groups + 1);
      });
    else
      for (int64_t i = 0; i < items; ++i)
        convImages(p, i % p.groups, i / p.groups, i / p.groups + 1);
  } else if (items >= threads || n >= kSplitColumnsPerThread * threads ||
             p.ocg < 16) {
    // Units of 16 columns; the pool's dynamic ranges even out the threads.
    const int64_t units = items * ((n + 15) / 16);
    const int64_t unitMacs = p.ocg * p.depth() * 16;
    const int64_t grain = (kMinParallelMacs + unitMacs - 1) / unitMacs;
    parallelFor(units, grain,
                [&](int64_t u0, int64_t u1) { convColumnRange(p, u0, u1); });
  } else {
    for (int64_t i = 0; i < items; ++i)
      convImages(p, i % p.groups, i / p.groups, i / p.groups + 1);
  }
}

extern "C" void weft_k_conv(void *const *bufs, const int64_t *desc) {
  if (runBF16AsF32(bufs, desc, 1, weft_k_conv))
    return;
  KernelArgs args("conv", bufs, desc);
  args.expectTensors(3, 4);
  args.expectAttrs(2);
  const bool hasBias = args.attr(0) != 0;
  args.expectTensors(hasBias ? 4 : 3, hasBias ? 4 : 3);
  for (int i = 0; i < args.numTensors(); ++i)
    if (args.tensor(i).dtype != WEFT_F32)
      args.unsupportedDType(args.tensor(i).dtype);
  const TensorArg &x = args.tensor(0);
  const TensorArg &w = args.tensor(1);
  const TensorArg &y = args.tensor(hasBias ? 3 : 2);
  const ConvShape shape =
      makeConvShape(args, x, y, w, 1, "expected x, w and y of equal rank >= 3");
  if (y.numel == 0)
    return;
  convForward(shape, x.as<float>(), w.as<float>(),
              hasBias ? args.tensor(2).as<float>() : nullptr, y.as<float>());
}
