//===- Winograd.cpp - 3x3 stride-1 convolution by Winograd's algorithm ----===//
//
// With A = m + 2 and transforms B^T (A x A), G (A x 3), A^T (m x A):
//   y_tile = A^T [ sum_c (G w_oc,c G^T) .* (B^T x_c,tile B) ] A
// Vectors run along channels: 16 input channels of one input pixel, or 16
// output channels of one output pixel, fill one zmm, so every transform is
// plain vector arithmetic whatever m, and channel counts that are multiples
// of 16 (those of CNNs) waste no lane. Buffers (rows hold all A^2 points xi,
// so each transform reads and writes contiguous memory):
//   U[c][xi][oc]         transformed weights (vectors along oc, built from
//                        the filters by 16x16 in-register transposes);
//   xp[c/16][h][w][16]   the zero-padded input, channels innermost;
//   V[tile][xi][c]       input transform;
//   M[tile][xi][oc]      the A^2 gemms  M_xi = V_xi x U_xi  (gemmTile);
//   yp[oc/16][h][w][16]  output transform (+ bias), transposed back into y.
// Early stages (many tiles, few channels) build U once and give each thread
// blocks of tiles whose V and M stay in its L2. Late stages (U larger than V
// and M of the whole image) transform the whole image's input first, then
// give each thread blocks of output channels: it builds its slice of U in
// its own cache and runs all gemms and the output transform of the slice,
// so U never makes a round trip through memory. Small images go through
// in passes of several (at least kPassTiles tiles, tiles numbered image by
// image), so the gemms have enough rows and the weights are transformed
// once per pass rather than once per image.
//
// m = 2 (A = 4) has transforms of additions and halvings only and rounds
// like direct convolution. m = 4 (A = 6) needs 1.8x fewer multiply-adds
// again; with the interpolation points 0, +-1, 2, -1/2 it rounds to a few
// parts per million of the output (ResNet-18 end to end: relative L2 error
// 3e-7 against PyTorch, 2e-7 with m = 2 only). winogradTileSize picks the
// cheaper of the two, or the direct method, from a cost model;
// WEFT_CONV_WINOGRAD=2 keeps it to m = 2 (=0: no Winograd).
//
//===----------------------------------------------------------------------===//

#include "Winograd.h"

#include "Gemm.h"
#include "Parallel.h"
#include "Scratch.h"
#include "Simd512.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace weft {
namespace cpu {
namespace {

/// F(2 x 2, 3 x 3), interpolation points 0, 1, -1.
struct F2 {
  static constexpr int kM = 2, kA = 4;
  static constexpr float kBT[4][4] = {
      {1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  static constexpr float kG[4][3] = {
      {1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}};
  static constexpr float kAT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
};

/// F(4 x 4, 3 x 3), interpolation points 0, 1, -1, 2, -1/2 (more accurate
/// than the usual 0, +-1, +-2).
struct F4 {
  static constexpr int kM = 4, kA = 6;
  static constexpr float kBT[6][6] = {
      {1, 1.5f, -2, -1.5f, 1, 0}, {0, -1, -2.5f, -0.5f, 1, 0},
      {0, 1, 0.5f, -2.5f, 1, 0},  {0, -0.5f, -1, 0.5f, 1, 0},
      {0, 2, -1, -2, 1, 0},       {0, 1, 1.5f, -2, -1.5f, 1}};
  static constexpr float kG[6][3] = {{1, 0, 0},
                                     {-1.0f / 3, -1.0f / 3, -1.0f / 3},
                                     {1.0f / 3, -1.0f / 3, 1.0f / 3},
                                     {1.0f / 15, 2.0f / 15, 4.0f / 15},
                                     {-16.0f / 15, 8.0f / 15, -4.0f / 15},
                                     {0, 0, 1}};
  static constexpr float kAT[4][6] = {{1, 1, 1, 1, 1, 0},
                                      {0, 1, -1, 2, -0.5f, 0},
                                      {0, 1, 1, 4, 0.25f, 0},
                                      {0, 1, -1, 8, -0.125f, 1}};
};

/// Cost of transforming one 3x3 filter for m = 2 and m = 4 (reading it
/// from memory, mostly), in gemm multiply-adds; and the cost of a direct
/// multiply-add (im2col, packing), relative to a gemm one. Measured.
constexpr int64_t kFilterCost[2] = {160, 280};
constexpr int64_t kDirectCostPercent = 120;
/// Floats of V plus M per thread at most (L2 share).
constexpr int64_t kBlockFloats = int64_t(160) << 10;

int64_t roundUp16(int64_t v) { return (v + 15) / 16 * 16; }

/// Tiles of a pass at least, when images are small enough to share one.
constexpr int64_t kPassTiles = 64;

/// Images of `batch` that one pass transforms and multiplies together,
/// with `tiles` output tiles each.
int64_t imagesPerPass(int64_t tiles, int64_t batch) {
  const int64_t images = (kPassTiles + tiles - 1) / tiles;
  return images < 1 ? 1 : images > batch ? batch : images;
}

std::atomic<int> gForced{0};

#if WEFT_HAVE_AVX512_KERNELS

/// out[i * os] = sum_j mat[i][j] in[j * is], i < R. The loops unroll and
/// the coefficients are compile-time constants: zeros and ones fold away.
template <int R, int C>
WEFT_TARGET_AVX512 inline __attribute__((always_inline)) void
apply(const float (&mat)[R][C], const __m512 *in, int is, __m512 *out, int os) {
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) {
    __m512 acc = _mm512_setzero_ps();
    bool first = true;
#pragma GCC unroll 8
    for (int j = 0; j < C; ++j) {
      const float c = mat[i][j];
      if (c == 0.0f)
        continue;
      const __m512 v = in[j * is];
      if (first && c == 1.0f)
        acc = v;
      else if (c == 1.0f)
        acc = _mm512_add_ps(acc, v);
      else if (c == -1.0f)
        acc = _mm512_sub_ps(acc, v);
      else
        acc = _mm512_fmadd_ps(_mm512_set1_ps(c), v, acc);
      first = false;
    }
    out[i * os] = acc;
  }
}

struct Shape {
  int64_t c, oc, cp, ocp; // channels, padded to 16
  int64_t tilesH, tilesW; // output tiles of one image
  int64_t tiles;          // tilesH * tilesW
  int64_t hp, wp;         // padded input extent
  int64_t inH, inW, outH, outW, padTop, padLeft;
};

/// U[c][xi][oc] for input channels [cb*16, cb*16+16) and output channels
/// [ob*16, ob*16+16). The 16 filters of an output channel for these input
/// channels are 144 consecutive floats; 16x16 transposes turn the 16 output
/// channels' rows into one vector (along oc) per (input channel, tap).
///
/// U goes to u[c * ldu + xi * plane + oc - oc0]: the caller's block of
/// output channels starting at oc0.
template <class F>
WEFT_TARGET_AVX512 void transformWeights(const Shape &s, const float *w,
                                         float *u, int64_t ldu, int64_t plane,
                                         int64_t oc0, int64_t ob, int64_t cb) {
  constexpr int A = F::kA;
  const int64_t ocs = s.oc - ob * 16 < 16 ? s.oc - ob * 16 : 16;
  const int64_t cs = s.c - cb * 16 < 16 ? s.c - cb * 16 : 16;
  const int64_t floats = cs > 0 ? cs * 9 : 0;
  __m512 g[144];
  const float *src = w + (ob * 16 * s.c + cb * 16) * 9;
  const int64_t lds = s.c * 9;
  for (int q = 0; q < 9; ++q, src += 16) {
    const __mmask16 m = lanesBelow(floats - q * 16);
    __m512 r[16];
    if (ocs == 16) {
#pragma GCC unroll 16
      for (int l = 0; l < 16; ++l)
        r[l] = _mm512_maskz_loadu_ps(m, src + l * lds);
    } else {
      for (int l = 0; l < 16; ++l)
        r[l] = _mm512_maskz_loadu_ps(l < ocs ? m : 0, src + l * lds);
    }
    transpose16(r);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i)
      g[q * 16 + i] = r[i];
  }
  for (int64_t ci = 0; ci < 16; ++ci) {
    float *dst = u + (cb * 16 + ci) * ldu + ob * 16 - oc0;
    __m512 t[A * 3], uu[A * A];
    if (ci < cs) {
#pragma GCC unroll 3
      for (int j = 0; j < 3; ++j)
        apply(F::kG, g + ci * 9 + j, 3, t + j, 3);
#pragma GCC unroll 6
      for (int i = 0; i < A; ++i)
        apply(F::kG, t + i * 3, 1, uu + i * A, 1);
    } else {
      for (int xi = 0; xi < A * A; ++xi)
        uu[xi] = _mm512_setzero_ps();
    }
#pragma GCC unroll 36
    for (int xi = 0; xi < A * A; ++xi, dst += plane)
      _mm512_storeu_ps(dst, uu[xi]);
  }
}

/// Rows [r0, r1) of xp (rows of all images and channel blocks,
/// (n * cp / 16 + cb) * hp + h) from the images at x.
WEFT_TARGET_AVX512 void padInput(const Shape &s, const float *x, float *xp,
                                 int64_t r0, int64_t r1) {
  const int64_t plane = s.inH * s.inW, imageRows = s.cp / 16 * s.hp;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / imageRows;
    const int64_t cb = r % imageRows / s.hp, h = r % s.hp;
    const int64_t ih = h - s.padTop;
    float *dst = xp + r * s.wp * 16;
    if (ih < 0 || ih >= s.inH) {
      std::memset(dst, 0, static_cast<size_t>(s.wp * 16) * sizeof(float));
      continue;
    }
    const int64_t lanes = s.c - cb * 16 < 16 ? s.c - cb * 16 : 16;
    // Columns left of the input, and right of it.
    for (int64_t q = 0; q < s.padLeft && q < s.wp; ++q)
      _mm512_storeu_ps(dst + q * 16, _mm512_setzero_ps());
    for (int64_t q = s.padLeft + s.inW; q < s.wp; ++q)
      _mm512_storeu_ps(dst + q * 16, _mm512_setzero_ps());
    const float *src = x + n * s.c * plane + (cb * 16 * s.inH + ih) * s.inW;
    const int64_t cols = s.wp - s.padLeft < s.inW ? s.wp - s.padLeft : s.inW;
    for (int64_t iw = 0; iw < cols; iw += 16) {
      const __mmask16 m = lanesBelow(cols - iw);
      __m512 v[16];
#pragma GCC unroll 16
      for (int l = 0; l < 16; ++l)
        v[l] = l < lanes ? _mm512_maskz_loadu_ps(m, src + l * plane + iw)
                         : _mm512_setzero_ps();
      transpose16(v);
      float *d = dst + (s.padLeft + iw) * 16;
      const int64_t n = cols - iw < 16 ? cols - iw : 16;
      for (int64_t l = 0; l < n; ++l)
        _mm512_storeu_ps(d + l * 16, v[l]);
    }
  }
}

/// Rows [r0, r1) ((n * ocp / 16 + ob) * outH + oh) of the images at y
/// from yp.
WEFT_TARGET_AVX512 void unpadOutput(const Shape &s, const float *yp, float *y,
                                    int64_t r0, int64_t r1) {
  const int64_t plane = s.outH * s.outW, imageRows = s.ocp / 16 * s.outH;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / imageRows;
    const int64_t ob = r % imageRows / s.outH, oh = r % s.outH;
    const int64_t lanes = s.oc - ob * 16 < 16 ? s.oc - ob * 16 : 16;
    const float *src = yp + r * s.outW * 16;
    float *dst = y + n * s.oc * plane + (ob * 16 * s.outH + oh) * s.outW;
    for (int64_t ow = 0; ow < s.outW; ow += 16) {
      const int64_t n = s.outW - ow < 16 ? s.outW - ow : 16;
      __m512 v[16];
#pragma GCC unroll 16
      for (int l = 0; l < 16; ++l)
        v[l] =
            l < n ? _mm512_loadu_ps(src + (ow + l) * 16) : _mm512_setzero_ps();
      transpose16(v);
      const __mmask16 m = lanesBelow(n);
      for (int64_t l = 0; l < lanes; ++l)
        _mm512_mask_storeu_ps(dst + l * plane + ow, m, v[l]);
    }
  }
}

/// Input transform of tiles [t0, t1) (tile t of image t / tiles of xp):
/// tile t, channel c, point xi goes to v[(t - t0) * ldv + xi * stride + c].
template <class F>
WEFT_TARGET_AVX512 void transformInput(const Shape &s, const float *xp,
                                       float *v, int64_t ldv, int64_t stride,
                                       int64_t t0, int64_t t1) {
  constexpr int A = F::kA, M = F::kM;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t n = t / s.tiles, ty = t % s.tiles / s.tilesW;
    const int64_t tx = t % s.tilesW;
    for (int64_t cb = 0; cb < s.cp / 16; ++cb) {
      const float *src =
          xp + (((n * s.cp / 16 + cb) * s.hp + ty * M) * s.wp + tx * M) * 16;
      __m512 d[A * A], e[A * A], o[A * A];
#pragma GCC unroll 6
      for (int i = 0; i < A; ++i)
#pragma GCC unroll 6
        for (int j = 0; j < A; ++j)
          d[i * A + j] = _mm512_loadu_ps(src + (i * s.wp + j) * 16);
#pragma GCC unroll 6
      for (int j = 0; j < A; ++j)
        apply(F::kBT, d + j, A, e + j, A);
#pragma GCC unroll 6
      for (int i = 0; i < A; ++i)
        apply(F::kBT, e + i * A, 1, o + i * A, 1);
      float *dst = v + (t - t0) * ldv + cb * 16;
#pragma GCC unroll 36
      for (int xi = 0; xi < A * A; ++xi)
        _mm512_storeu_ps(dst + xi * stride, o[xi]);
    }
  }
}

/// Output transform of tiles [t0, t1) (tile t of image t / tiles) and
/// output channel blocks [ob0, ob1), reading tile t, output channel oc,
/// point xi at mm[xi * stride + (t - t0) * ldm + oc - 16 * ob0], into yp.
template <class F>
WEFT_TARGET_AVX512 void
transformOutput(const Shape &s, const float *mm, int64_t stride, int64_t ldm,
                int64_t ob0, int64_t ob1, const float *bias, float *yp,
                int64_t t0, int64_t t1) {
  constexpr int A = F::kA, M = F::kM;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t n = t / s.tiles, ty = t % s.tiles / s.tilesW;
    const int64_t tx = t % s.tilesW;
    const int64_t rows = s.outH - ty * M < M ? s.outH - ty * M : M;
    const int64_t cols = s.outW - tx * M < M ? s.outW - tx * M : M;
    for (int64_t ob = ob0; ob < ob1; ++ob) {
      const float *src = mm + (t - t0) * ldm + (ob - ob0) * 16;
      __m512 d[A * A], e[M * A], o[M * M];
#pragma GCC unroll 36
      for (int xi = 0; xi < A * A; ++xi)
        d[xi] = _mm512_loadu_ps(src + xi * stride);
#pragma GCC unroll 6
      for (int j = 0; j < A; ++j)
        apply(F::kAT, d + j, A, e + j, A);
#pragma GCC unroll 4
      for (int i = 0; i < M; ++i)
        apply(F::kAT, e + i * A, 1, o + i * M, 1);
      const __m512 b = bias ? _mm512_maskz_loadu_ps(lanesBelow(s.oc - ob * 16),
                                                    bias + ob * 16)
                            : _mm512_setzero_ps();
      float *dst =
          yp +
          (((n * s.ocp / 16 + ob) * s.outH + ty * M) * s.outW + tx * M) * 16;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          _mm512_storeu_ps(dst + (i * s.outW + j) * 16,
                           _mm512_add_ps(o[i * M + j], b));
    }
  }
}

template <class F> void run(const Conv3x3 &c) {
  constexpr int A = F::kA, M = F::kM;
  Shape s;
  s.c = c.channels;
  s.oc = c.outChannels;
  s.cp = roundUp16(s.c);
  s.ocp = roundUp16(s.oc);
  s.tilesH = (c.outH + M - 1) / M;
  s.tilesW = (c.outW + M - 1) / M;
  s.tiles = s.tilesH * s.tilesW;
  s.hp = s.tilesH * M + 2;
  s.wp = s.tilesW * M + 2;
  s.inH = c.inH;
  s.inW = c.inW;
  s.outH = c.outH;
  s.outW = c.outW;
  s.padTop = c.padTop;
  s.padLeft = c.padLeft;
  const int threads = numThreads();
  // Images per pass: small images go several at a time, so that each pass
  // has enough tiles for full gemms and transforms the weights once for
  // all of them.
  const int64_t images = imagesPerPass(s.tiles, c.batch);
  const int64_t tiles = images * s.tiles; // of a full pass
  const int64_t inImage = s.c * s.inH * s.inW,
                outImage = s.oc * s.outH * s.outW;

  float *xp = scratch<float>(3, images * s.cp * s.hp * s.wp);
  float *yp = scratch<float>(4, images * s.ocp * s.outH * s.outW);
  const int64_t oblocks = s.ocp / 16, cblocks = s.cp / 16;
  const int64_t inRows = cblocks * s.hp, outRows = oblocks * s.outH;

  // Large U (late stages: many channels, few tiles): by blocks of output
  // channels. The input transform of the pass's images comes first; then a
  // thread transforms the weights of its block into its own L2-sized U
  // block and runs all the gemms and the output transform of that block, so
  // U never leaves the thread's cache. Else by blocks of tiles: U is built
  // once for all, and a thread transforms, multiplies and transforms back
  // a block of tiles (V and M in its L2).
  if (s.cp * s.ocp > tiles * (s.cp + s.ocp)) {
    // Output channel vectors per block: two at least, for full-width tiles.
    int64_t perBlock = kBlockFloats / (A * A * (s.cp + tiles)) / 16;
    perBlock = perBlock < 2 ? 2 : perBlock;
    int64_t groups = (oblocks + perBlock - 1) / perBlock;
    groups = (groups + threads - 1) / threads * threads;
    groups = groups > oblocks ? oblocks : groups;
    const int64_t ldv = A * A * s.cp + 16;
    float *vAll = scratch<float>(2, tiles * ldv);
    for (int64_t n0 = 0; n0 < c.batch; n0 += images) {
      const int64_t nb = c.batch - n0 < images ? c.batch - n0 : images;
      const int64_t passTiles = nb * s.tiles;
      const float *x = c.x + n0 * inImage;
      float *y = c.y + n0 * outImage;
      parallelFor(nb * inRows, grainFor(s.wp * 16),
                  [&](int64_t r0, int64_t r1) { padInput(s, x, xp, r0, r1); });
      parallelFor(
          passTiles, grainFor(A * A * s.cp), [&](int64_t t0, int64_t t1) {
            transformInput<F>(s, xp, vAll + t0 * ldv, ldv, s.cp, t0, t1);
          });
      parallelFor(groups, 1, [&](int64_t g0, int64_t g1) {
        for (int64_t gi = g0; gi < g1; ++gi) {
          const int64_t ob0 = gi * oblocks / groups;
          const int64_t ob1 = (gi + 1) * oblocks / groups;
          const int64_t width = 16 * (ob1 - ob0), ld = A * A * width + 16;
          float *u = scratch<float>(0, s.cp * ld);
          float *mm = scratch<float>(1, passTiles * ld);
          for (int64_t ob = ob0; ob < ob1; ++ob)
            for (int64_t cb = 0; cb < cblocks; ++cb)
              transformWeights<F>(s, c.w, u, ld, width, 16 * ob0, ob, cb);
          for (int xi = 0; xi < A * A; ++xi)
            gemmTile(passTiles, width, s.cp, vAll + xi * s.cp, ldv,
                     u + xi * width, ld, mm + xi * width, ld, nullptr, false);
          transformOutput<F>(s, mm, width, ld, ob0, ob1, c.bias, yp, 0,
                             passTiles);
        }
      });
      parallelFor(
          nb * outRows, grainFor(s.outW * 16),
          [&](int64_t r0, int64_t r1) { unpadOutput(s, yp, y, r0, r1); });
    }
    return;
  }

  // Rows of U (per input channel), V and M (per tile) hold all points xi;
  // 16 floats of padding keep rows from aliasing in L1.
  const int64_t ldu = A * A * s.ocp + 16;
  const int64_t ldv = A * A * s.cp + 16, ldm = ldu;
  float *u = scratch<float>(2, s.cp * ldu);
  parallelFor(oblocks * cblocks, grainFor(A * A * 256),
              [&](int64_t b, int64_t e) {
                for (int64_t i = b; i < e; ++i)
                  transformWeights<F>(s, c.w, u, ldu, s.ocp, 0, i / cblocks,
                                      i % cblocks);
              });
  // Tile blocks: V and M within kBlockFloats, and a multiple of the
  // thread count of them so the threads finish together.
  int64_t maxTiles = kBlockFloats / (A * A * (s.cp + s.ocp));
  maxTiles = maxTiles < 12 ? 12 : maxTiles;
  for (int64_t n0 = 0; n0 < c.batch; n0 += images) {
    const int64_t nb = c.batch - n0 < images ? c.batch - n0 : images;
    const int64_t passTiles = nb * s.tiles;
    int64_t blocks = (passTiles + maxTiles - 1) / maxTiles;
    blocks = (blocks + threads - 1) / threads * threads;
    blocks = blocks > passTiles ? passTiles : blocks;
    const float *x = c.x + n0 * inImage;
    float *y = c.y + n0 * outImage;
    parallelFor(nb * inRows, grainFor(s.wp * 16),
                [&](int64_t r0, int64_t r1) { padInput(s, x, xp, r0, r1); });
    parallelFor(blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t t0 = b * passTiles / blocks;
        const int64_t t1 = (b + 1) * passTiles / blocks;
        const int64_t tb = t1 - t0;
        float *v = scratch<float>(0, tb * ldv);
        float *mm = scratch<float>(1, tb * ldm);
        transformInput<F>(s, xp, v, ldv, s.cp, t0, t1);
        for (int xi = 0; xi < A * A; ++xi)
          gemmTile(tb, s.ocp, s.cp, v + xi * s.cp, ldv, u + xi * s.ocp, ldu,
                   mm + xi * s.ocp, ldm, nullptr, false);
        transformOutput<F>(s, mm, s.ocp, ldm, 0, oblocks, c.bias, yp, t0, t1);
      }
    });
    parallelFor(nb * outRows, grainFor(s.outW * 16),
                [&](int64_t r0, int64_t r1) { unpadOutput(s, yp, y, r0, r1); });
  }
}

#endif // WEFT_HAVE_AVX512_KERNELS

} // namespace

int winogradTileSize(const Conv3x3 &c) {
#if WEFT_HAVE_AVX512_KERNELS
  if (!gemmUsesOwnKernels())
    return 0;
  const int forced = gForced.load(std::memory_order_relaxed);
  if (forced != 0)
    return forced < 0 ? 0 : forced == 4 ? 4 : 2;
  static const int allowed = [] {
    const char *env = std::getenv("WEFT_CONV_WINOGRAD");
    return !env                         ? 4
           : std::strcmp(env, "0") == 0 ? 0
           : std::strcmp(env, "2") == 0 ? 2
                                        : 4;
  }();
  if (allowed == 0 || c.channels < 8 || c.outChannels < 8)
    return 0;
  // Estimated cost of each method in multiply-adds: the gemms plus the
  // weight transform, or direct convolution plus im2col's share.
  const int64_t cp = roundUp16(c.channels), ocp = roundUp16(c.outChannels);
  const int64_t direct = 9 * c.channels * c.outChannels * c.outH * c.outW *
                         kDirectCostPercent / 100;
  int best = 0;
  int64_t bestCost = direct;
  for (int m = 2; m <= allowed; m += 2) {
    const int64_t a = m + 2;
    // Per image; small images share their pass's weight transform.
    const int64_t tiles = ((c.outH + m - 1) / m) * ((c.outW + m - 1) / m);
    const int64_t cost =
        cp * ocp *
        (a * a * tiles + kFilterCost[m / 4] / imagesPerPass(tiles, c.batch));
    if (cost < bestCost) {
      best = m;
      bestCost = cost;
    }
  }
  return best;
#else
  (void)c;
  return 0;
#endif
}

void winogradForceForTesting(int m) {
  gForced.store(m, std::memory_order_relaxed);
}

void winogradConv3x3(const Conv3x3 &c, int m) {
#if WEFT_HAVE_AVX512_KERNELS
  if (m == 4)
    run<F4>(c);
  else
    run<F2>(c);
#else
  (void)c;
  (void)m;
#endif
}

} // namespace cpu
} // namespace weft
