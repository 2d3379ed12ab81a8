//===- ConvGrad.cpp - conv_grad_input and conv_grad_weight kernels --------===//
//
// Gradients of conv (Conv.cpp) for 1-D to 3-D convs with groups, strides,
// pads and dilations. Per (image, group), with T taps and P output
// positions, the forward is y_g[OCg, P] = w_g[OCg, Cg*T] x cols[Cg*T, P]:
//
//   dx_g = col2im(w_g^T x dy_g)          (conv_grad_input)
//   dw_g = sum over images of dy_g x cols^T    (conv_grad_weight)
//
// Taps that read only padding are dropped first (ConvTaps.h). With unit
// strides dx is itself a conv of dy and runs on conv's forward, Winograd
// included (ConvGradAsConv.cpp). With at most kBatchedPositions positions per
// image, the products run over many images' columns at once
// (gemmTile), so w is read, and dw accumulated, once for all of them.
// Otherwise the gemms are cblas_sgemm over column blocks of whole output
// rows. Work splits into tasks whose shapes depend only on the problem,
// never on the thread count, and every sum runs in a fixed order inside one
// task (or, for dw over batch chunks, partials added in chunk order), so
// results are bitwise the same for any number of threads. grad_input tasks
// own whole input channels, so col2im never races. Convs with one input
// channel per group and few outputs per group (depthwise) are computed
// directly: through a table of where each tap reads for planes of at most
// kSmallPlane outputs, dw on zero-padded planes with unit strides, else by
// output rows.
//
//===----------------------------------------------------------------------===//

#include "ConvForward.h"
#include "ConvTaps.h"
#include "Gemm.h"
#include "GradRowOps.h"
#include "Parallel.h"
#include "RowOps.h"
#include "Scratch.h"
#include "Widen.h"

#include <cblas.h>
#include <cstring>
#include <vector>

using namespace weft;
using namespace weft::cpu;

namespace {

/// Upper bound on the floats of one im2col / col2im block.
constexpr int64_t kColsBudget = int64_t(1) << 20;
/// conv_grad_input: multiply-adds a task aims for, big enough to amortize
/// a gemm call and the pool, small enough to give the pool several tasks.
constexpr int64_t kTaskMacs = int64_t(1) << 24;
/// Rows (of cols) a gemm task takes at least, so gemms are not too thin.
constexpr int64_t kMinTaskRows = 32;
/// conv_grad_weight: multiply-adds per task, most tasks, and most floats
/// of partial dw sums (one dw per batch chunk past the first).
constexpr int64_t kWeightTaskMacs = int64_t(1) << 23;
constexpr int64_t kMaxWeightTasks = 64;
constexpr int64_t kPartialBudget = int64_t(1) << 22;
/// Depthwise path: one input channel and at most this many outputs per group.
constexpr int64_t kMaxDirectOcg = 4;

struct ConvGradProblem : ConvShape {
  bool direct() const { return cg == 1 && ocg <= kMaxDirectOcg; }
};

/// Reads and checks the common part of both kernels: `in` is x or dx, `dy`
/// the output gradient, `w` the weight or its gradient.
ConvGradProblem makeProblem(const KernelArgs &args, const TensorArg &in,
                            const TensorArg &dy, const TensorArg &w) {
  for (int i = 0; i < 3; ++i)
    args.expectDType(i, WEFT_F32);
  ConvGradProblem p;
  static_cast<ConvShape &>(p) = makeConvShape(
      args, in, dy, w, 0, "expected x, w and dy of equal rank >= 3");
  return p;
}

/// Decodes im2col row r into (channel, kd, kh, kw).
inline void decodeRow(const WindowGeometry &g, int64_t r, int64_t &c,
                      int64_t &td, int64_t &th, int64_t &tw) {
  tw = r % g.kernel[2];
  th = (r / g.kernel[2]) % g.kernel[1];
  td = (r / (g.kernel[2] * g.kernel[1])) % g.kernel[0];
  c = r / g.kernelSize();
}

/// Rows [rowBegin, rowEnd) of the im2col block of output rows [orBegin,
/// orEnd) of the group input `xg` (as in Conv.cpp); the block has `ld`
/// columns.
void im2colRows(const WindowGeometry &g, const float *xg, int64_t rowBegin,
                int64_t rowEnd, int64_t orBegin, int64_t orEnd, float *cols,
                int64_t ld) {
  const int64_t ow = g.out[2], inW = g.in[2], inHW = g.in[1] * g.in[2];
  const int64_t sw = g.stride[2];
  for (int64_t r = rowBegin; r < rowEnd; ++r) {
    int64_t c, td, th, tw, wLo, wHi;
    decodeRow(g, r, c, td, th, tw);
    g.validOutputs(2, tw, wLo, wHi);
    const float *xc = xg + c * g.inSize();
    const int64_t wOffset = tw * g.dilation[2] - g.padBegin[2];
    float *dst = cols + (r - rowBegin) * ld;
    for (int64_t orow = orBegin; orow < orEnd; ++orow, dst += ow) {
      const int64_t oh = orow % g.out[1], od = orow / g.out[1];
      const int64_t id = od * g.stride[0] - g.padBegin[0] + td * g.dilation[0];
      const int64_t ih = oh * g.stride[1] - g.padBegin[1] + th * g.dilation[1];
      if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || wLo >= wHi) {
        std::memset(dst, 0, static_cast<size_t>(ow) * sizeof(float));
        continue;
      }
      const float *src = xc + id * inHW + ih * inW + wLo * sw + wOffset;
      for (int64_t o = 0; o < wLo; ++o)
        dst[o] = 0.0f;
      if (sw == 1)
        std::memcpy(dst + wLo, src,
                    static_cast<size_t>(wHi - wLo) * sizeof(float));
      else
        for (int64_t o = wLo; o < wHi; ++o)
          dst[o] = src[(o - wLo) * sw];
      for (int64_t o = wHi; o < ow; ++o)
        dst[o] = 0.0f;
    }
  }
}

/// Adjoint of im2colRows: adds the block's rows into the group input
/// gradient `dxg`.
void col2imRows(const WindowGeometry &g, const float *cols, int64_t rowBegin,
                int64_t rowEnd, int64_t orBegin, int64_t orEnd, int64_t ld,
                float *dxg) {
  const int64_t ow = g.out[2], inW = g.in[2], inHW = g.in[1] * g.in[2];
  const int64_t sw = g.stride[2];
  for (int64_t r = rowBegin; r < rowEnd; ++r) {
    int64_t c, td, th, tw, wLo, wHi;
    decodeRow(g, r, c, td, th, tw);
    g.validOutputs(2, tw, wLo, wHi);
    if (wLo >= wHi)
      continue;
    float *dxc = dxg + c * g.inSize();
    const int64_t wOffset = tw * g.dilation[2] - g.padBegin[2];
    const float *src = cols + (r - rowBegin) * ld;
    for (int64_t orow = orBegin; orow < orEnd; ++orow, src += ow) {
      const int64_t oh = orow % g.out[1], od = orow / g.out[1];
      const int64_t id = od * g.stride[0] - g.padBegin[0] + td * g.dilation[0];
      const int64_t ih = oh * g.stride[1] - g.padBegin[1] + th * g.dilation[1];
      if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1])
        continue;
      scatterAddRow(dxc + id * inHW + ih * inW + wLo * sw + wOffset, sw,
                    src + wLo, wHi - wLo);
    }
  }
}

/// Output rows per im2col block of `rows` rows.
int64_t blockOutRows(const WindowGeometry &g, int64_t rows) {
  const int64_t outRows = g.out[0] * g.out[1];
  int64_t b = kColsBudget / (rows * g.out[2] > 0 ? rows * g.out[2] : 1);
  return b < 1 ? 1 : b > outRows ? outRows : b;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// v clamped to [lo, hi]; hi wins when lo > hi.
int64_t clamp(int64_t v, int64_t lo, int64_t hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

/// For the output positions whose tap (td, th, tw) lies in the input, one
/// output row segment at a time: fn(outOffset, inOffset, count), offsets
/// into an output and an input plane (the input advancing by stride[2]).
template <class Fn>
void forEachTapSegment(const WindowGeometry &g, int64_t td, int64_t th,
                       int64_t tw, Fn fn) {
  int64_t dLo, dHi, hLo, hHi, wLo, wHi;
  g.validOutputs(0, td, dLo, dHi);
  g.validOutputs(1, th, hLo, hHi);
  g.validOutputs(2, tw, wLo, wHi);
  if (wLo >= wHi)
    return;
  const int64_t wOff = wLo * g.stride[2] + tw * g.dilation[2] - g.padBegin[2];
  for (int64_t od = dLo; od < dHi; ++od) {
    const int64_t id = od * g.stride[0] - g.padBegin[0] + td * g.dilation[0];
    for (int64_t oh = hLo; oh < hHi; ++oh) {
      const int64_t ih = oh * g.stride[1] - g.padBegin[1] + th * g.dilation[1];
      fn((od * g.out[1] + oh) * g.out[2] + wLo,
         (id * g.in[1] + ih) * g.in[2] + wOff, wHi - wLo);
    }
  }
}

//===-- conv_grad_input ---------------------------------------------------===//

/// Depthwise: input plane (n, c) gathers from output planes c*ocg.. .
void directGradInputPlane(const ConvGradProblem &p, const float *dy,
                          const float *w, float *dx, int64_t plane) {
  const WindowGeometry &g = p.g;
  const int64_t n = plane / p.channels, c = plane % p.channels;
  float *dxp = dx + plane * g.inSize();
  std::memset(dxp, 0, static_cast<size_t>(g.inSize()) * sizeof(float));
  for (int64_t j = 0; j < p.ocg; ++j) {
    const int64_t oc = c * p.ocg + j;
    const float *dyp = dy + (n * p.outChannels + oc) * g.outSize();
    const float *wp = w + oc * p.taps();
    for (int64_t t = 0; t < p.taps(); ++t) {
      int64_t unused, td, th, tw;
      decodeRow(g, t, unused, td, th, tw);
      const float wv = wp[t];
      forEachTapSegment(g, td, th, tw, [&](int64_t o, int64_t i, int64_t k) {
        scatterAxpyRow(dxp + i, g.stride[2], dyp + o, wv, k);
      });
    }
  }
}

/// directGradInputPlane for small planes, through `offsets` (same order of
/// additions: output channel, tap, then position).
void smallGradInputPlane(const ConvGradProblem &p, const float *dy,
                         const float *w, float *dx, const int64_t *offsets,
                         int64_t plane) {
  const WindowGeometry &g = p.g;
  const int64_t n = plane / p.channels, c = plane % p.channels;
  const int64_t T = p.taps(), P = g.outSize();
  float *dxp = dx + plane * g.inSize();
  std::memset(dxp, 0, static_cast<size_t>(g.inSize()) * sizeof(float));
  for (int64_t j = 0; j < p.ocg; ++j) {
    const int64_t oc = c * p.ocg + j;
    const float *dyp = dy + (n * p.outChannels + oc) * P;
    for (int64_t t = 0; t < T; ++t) {
      const float wv = w[oc * T + t];
      const int64_t *at = offsets + t * P;
      for (int64_t q = 0; q < P; ++q)
        if (at[q] >= 0)
          dxp[at[q]] += wv * dyp[q];
    }
  }
}

/// Input channels [c0, c1) of group `grp` of image n.
void gemmGradInputTask(const ConvGradProblem &p, const float *dy,
                       const float *w, float *dx, int64_t n, int64_t grp,
                       int64_t c0, int64_t c1) {
  const WindowGeometry &g = p.g;
  const int64_t T = p.taps(), P = g.outSize(), k = p.cg * T;
  const int64_t rows = (c1 - c0) * T;
  const float *wg = w + grp * p.ocg * k + c0 * T;
  const float *dyg = dy + (n * p.outChannels + grp * p.ocg) * P;
  float *dxg = dx + (n * p.channels + grp * p.cg) * g.inSize();
  if (p.pointwise()) {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)rows, (int)P,
                (int)p.ocg, 1.0f, wg, (int)k, dyg, (int)P, 0.0f,
                dxg + c0 * g.inSize(), (int)P);
    return;
  }
  std::memset(dxg + c0 * g.inSize(), 0,
              static_cast<size_t>((c1 - c0) * g.inSize()) * sizeof(float));
  const int64_t ow = g.out[2], outRows = g.out[0] * g.out[1];
  const int64_t blockRows = blockOutRows(g, rows);
  float *cols = scratch<float>(0, rows * blockRows * ow);
  for (int64_t r0 = 0; r0 < outRows; r0 += blockRows) {
    const int64_t r1 = r0 + blockRows < outRows ? r0 + blockRows : outRows;
    const int64_t ld = (r1 - r0) * ow;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)rows, (int)ld,
                (int)p.ocg, 1.0f, wg, (int)k, dyg + r0 * ow, (int)P, 0.0f, cols,
                (int)ld);
    col2imRows(g, cols, c0 * T, c1 * T, r0, r1, ld, dxg);
  }
}

//===-- conv_grad_weight --------------------------------------------------===//

/// Depthwise: dw[oc, :] sums over every image's output plane oc. Per image,
/// each tap accumulates products column-wise over the output rows (`acc`
/// holds taps * out[2] floats); the columns are then summed into doubles.
void directGradWeightChannel(const ConvGradProblem &p, const float *x,
                             const float *dy, float *dw, int64_t oc,
                             float *acc) {
  const WindowGeometry &g = p.g;
  const int64_t T = p.taps(), ic = oc / p.ocg, ow = g.out[2];
  std::vector<double> total(static_cast<size_t>(T), 0.0);
  for (int64_t n = 0; n < p.batch; ++n) {
    const float *dyp = dy + (n * p.outChannels + oc) * g.outSize();
    const float *xp = x + (n * p.channels + ic) * g.inSize();
    std::memset(acc, 0, static_cast<size_t>(T * ow) * sizeof(float));
    for (int64_t t = 0; t < T; ++t) {
      int64_t unused, td, th, tw;
      decodeRow(g, t, unused, td, th, tw);
      float *row = acc + t * ow;
      forEachTapSegment(g, td, th, tw, [&](int64_t o, int64_t i, int64_t k) {
        mulAddRow(row + o % ow, dyp + o, xp + i, g.stride[2], k);
      });
    }
    for (int64_t t = 0; t < T; ++t)
      total[t] += rowSum(acc + t * ow, ow);
  }
  for (int64_t t = 0; t < T; ++t)
    dw[oc * T + t] = static_cast<float>(total[t]);
}

/// directGradWeightChannel for small planes, through `offsets`: per image
/// and tap one sum over the positions, the images' sums added in double.
void smallGradWeightChannel(const ConvGradProblem &p, const float *x,
                            const float *dy, float *dw, const int64_t *offsets,
                            int64_t oc) {
  const WindowGeometry &g = p.g;
  const int64_t T = p.taps(), P = g.outSize(), ic = oc / p.ocg;
  std::vector<double> total(static_cast<size_t>(T), 0.0);
  for (int64_t n = 0; n < p.batch; ++n) {
    const float *dyp = dy + (n * p.outChannels + oc) * P;
    const float *xp = x + (n * p.channels + ic) * g.inSize();
    for (int64_t t = 0; t < T; ++t) {
      const int64_t *at = offsets + t * P;
      float acc = 0.0f;
      for (int64_t q = 0; q < P; ++q)
        if (at[q] >= 0)
          acc += dyp[q] * xp[at[q]];
      total[t] += acc;
    }
  }
  for (int64_t t = 0; t < T; ++t)
    dw[oc * T + t] = static_cast<float>(total[t]);
}

/// Whether directGradWeightChannel's padded-plane form applies: 1-D or 2-D,
/// unit strides and dilations.
bool paddedPlanes(const ConvGradProblem &p) {
  const WindowGeometry &g = p.g;
  return g.in[0] == 1 && g.out[0] == 1 && g.kernel[0] == 1 &&
         g.stride[1] == 1 && g.stride[2] == 1 && g.dilation[1] == 1 &&
         g.dilation[2] == 1;
}

/// Floats of `buf` paddedGradWeightChannel needs.
int64_t paddedPlaneFloats(const ConvGradProblem &p) {
  const WindowGeometry &g = p.g;
  const int64_t wp = g.out[2] + g.kernel[2] - 1;
  return (2 * g.out[1] + g.kernel[1]) * wp;
}

/// directGradWeightChannel with unit strides (paddedPlanes): x goes into a
/// zero-padded plane wp = out[2] + kw - 1 wide and dy into rows of the same
/// stride, zero past each output row. Output (oh, ow) then reads tap (th,
/// tw) at padded offset (oh + th) * wp + ow + tw, so each tap's sum over an
/// image is one contiguous dot product: the products that run past an
/// output row into the next meet dy's zeros. (Per output row the short
/// rows of small images cost more in calls than in arithmetic.)
void paddedGradWeightChannel(const ConvGradProblem &p, const float *x,
                             const float *dy, float *dw, int64_t oc,
                             float *buf) {
  const WindowGeometry &g = p.g;
  const int64_t T = p.taps(), ic = oc / p.ocg;
  const int64_t kh = g.kernel[1], kw = g.kernel[2];
  const int64_t oh = g.out[1], ow = g.out[2];
  const int64_t wp = ow + kw - 1, hp = oh + kh;
  float *xp = buf, *dyp = buf + hp * wp;
  std::vector<double> total(static_cast<size_t>(T), 0.0);
  for (int64_t n = 0; n < p.batch; ++n) {
    const float *xs = x + (n * p.channels + ic) * g.inSize();
    const float *dys = dy + (n * p.outChannels + oc) * g.outSize();
    padPlane(g, xs, xp, wp, hp);
    for (int64_t r = 0; r < oh; ++r)
      for (int64_t j = 0; j < wp; ++j)
        dyp[r * wp + j] = j < ow ? dys[r * ow + j] : 0.0f;
    for (int64_t t = 0; t < T; ++t)
      total[t] += rowDot(dyp, xp + t / kw * wp + t % kw, oh * wp);
  }
  for (int64_t t = 0; t < T; ++t)
    dw[oc * T + t] = static_cast<float>(total[t]);
}

/// Adds the contributions of images [n0, n1) to columns [q0, q1) of group
/// grp's dw (rows of length cg*T) in `out`, which the caller zeroed.
void gemmGradWeightTask(const ConvGradProblem &p, const float *x,
                        const float *dy, float *out, int64_t grp, int64_t q0,
                        int64_t q1, int64_t n0, int64_t n1) {
  const WindowGeometry &g = p.g;
  const int64_t P = g.outSize(), k = p.cg * p.taps();
  const int64_t rows = q1 - q0;
  float *dwg = out + grp * p.ocg * k + q0;
  const int64_t ow = g.out[2], outRows = g.out[0] * g.out[1];
  const bool pointwise = p.pointwise();
  const int64_t blockRows = blockOutRows(g, rows);
  float *cols = pointwise ? nullptr : scratch<float>(0, rows * blockRows * ow);
  for (int64_t n = n0; n < n1; ++n) {
    const float *xg = x + (n * p.channels + grp * p.cg) * g.inSize();
    const float *dyg = dy + (n * p.outChannels + grp * p.ocg) * P;
    if (pointwise) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)p.ocg,
                  (int)rows, (int)P, 1.0f, dyg, (int)P, xg + q0 * P, (int)P,
                  1.0f, dwg, (int)k);
      continue;
    }
    for (int64_t r0 = 0; r0 < outRows; r0 += blockRows) {
      const int64_t r1 = r0 + blockRows < outRows ? r0 + blockRows : outRows;
      const int64_t ld = (r1 - r0) * ow;
      im2colRows(g, xg, q0, q1, r0, r1, cols, ld);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)p.ocg,
                  (int)rows, (int)ld, 1.0f, dyg + r0 * ow, (int)P, cols,
                  (int)ld, 1.0f, dwg, (int)k);
    }
  }
}

void gemmGradWeight(const ConvGradProblem &p, const float *x, const float *dy,
                    float *dw, int64_t dwNumel) {
  const int64_t P = p.g.outSize(), k = p.cg * p.taps();
  // Tasks of about kWeightTaskMacs each, all shapes from the problem size
  // only: first batch chunks (whole-row gemms, partial dw summed after),
  // as many as the partials' memory allows, then column chunks of each
  // group's dw.
  const int64_t macs = p.groups * p.ocg * k * p.batch * P;
  const int64_t maxTasks = clamp(macs / kWeightTaskMacs, 1, kMaxWeightTasks);
  int64_t batchChunks = clamp(maxTasks / p.groups, 1, p.batch);
  const int64_t partialCap = kPartialBudget / dwNumel;
  batchChunks = clamp(batchChunks, 1, partialCap < 1 ? 1 : partialCap);
  int64_t rowChunks =
      clamp(maxTasks / (p.groups * batchChunks), 1, ceilDiv(k, kMinTaskRows));
  const int64_t chunkRows = ceilDiv(k, rowChunks);
  rowChunks = ceilDiv(k, chunkRows);
  const int64_t boxes = p.groups * rowChunks;
  std::vector<float> partial(static_cast<size_t>((batchChunks - 1) * dwNumel),
                             0.0f);
  std::memset(dw, 0, static_cast<size_t>(dwNumel) * sizeof(float));
  const int64_t tasks = boxes * batchChunks;
  parallelFor(tasks, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t bc = t % batchChunks, box = t / batchChunks;
      const int64_t grp = box / rowChunks, rc = box % rowChunks;
      const int64_t q0 = rc * chunkRows;
      const int64_t q1 = q0 + chunkRows < k ? q0 + chunkRows : k;
      float *out = bc == 0 ? dw : partial.data() + (bc - 1) * dwNumel;
      gemmGradWeightTask(p, x, dy, out, grp, q0, q1, bc * p.batch / batchChunks,
                         (bc + 1) * p.batch / batchChunks);
    }
  });
  if (batchChunks == 1)
    return;
  parallelFor(dwNumel, grainFor(batchChunks), [&](int64_t b, int64_t e) {
    for (int64_t bc = 1; bc < batchChunks; ++bc)
      addRow(dw + b, partial.data() + (bc - 1) * dwNumel + b, 1, e - b);
  });
}

//===-- few output positions: images side by side -------------------------===//

/// Output positions per image up to which the gradients multiply the
/// columns of many images at once, as conv does (Conv.cpp's convImages), so
/// that each product reads w or accumulates dw once for all of them (8x8
/// images included: resnet18's dw at 8x8 takes 15% less time so, at 16x16
/// 40% more); the columns of one such product at most; multiply-adds per
/// task.
constexpr int64_t kBatchedPositions = 64;
constexpr int64_t kBatchedColumns = 512;
constexpr int64_t kBatchedTaskMacs = int64_t(1) << 21;

bool batchesImages(const ConvGradProblem &p) {
  return p.g.outSize() <= kBatchedPositions && p.batch > 1;
}

/// Images per batched product.
int64_t batchedImages(const ConvGradProblem &p) {
  const int64_t P = p.g.outSize();
  return P >= kBatchedColumns ? 1 : kBatchedColumns / P;
}

/// dy of images [n0, n1) and group grp as one [OCg, images x P] matrix,
/// image by image along its rows.
void gatherImages(const ConvGradProblem &p, const float *dy, int64_t grp,
                  int64_t n0, int64_t n1, float *dst) {
  const int64_t P = p.g.outSize(), cols = (n1 - n0) * P;
  parallelFor(p.ocg, grainFor(cols), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o)
      for (int64_t n = n0; n < n1; ++n) {
        const float *src = dy + (n * p.outChannels + grp * p.ocg + o) * P;
        float *row = dst + o * cols + (n - n0) * P;
        for (int64_t q = 0; q < P; ++q)
          row[q] = src[q];
      }
  });
}

/// Input channels [c0, c1) of group grp of image n, `dxg` the image's
/// group, from rows [c0 * T, c1 * T) of the columns' gradient `cols` (the
/// image's P columns, `ld` floats per row).
void imageGradInput(const ConvGradProblem &p, const float *cols, int64_t ld,
                    int64_t c0, int64_t c1, float *dxg) {
  const WindowGeometry &g = p.g;
  float *dst = dxg + c0 * g.inSize();
  if (p.pointwise()) {
    for (int64_t c = c0; c < c1; ++c, dst += g.inSize())
      for (int64_t q = 0; q < g.inSize(); ++q)
        dst[q] = cols[(c - c0) * ld + q];
    return;
  }
  std::memset(dst, 0,
              static_cast<size_t>((c1 - c0) * g.inSize()) * sizeof(float));
  col2imRows(g, cols, c0 * p.taps(), c1 * p.taps(), 0, g.out[0] * g.out[1], ld,
             dxg);
}

/// dx of images [n0, n1) and group grp: the columns' gradient
/// w_g^T x dy' (dy' from gatherImages) for all the images at once, tasks
/// owning whole input channels (so col2im never races) in chunks sized by
/// the problem alone.
void gradInputImages(const ConvGradProblem &p, const float *dy, const float *w,
                     float *dx, int64_t grp, int64_t n0, int64_t n1) {
  const int64_t T = p.taps(), P = p.g.outSize(), k = p.cg * T;
  const int64_t cols = (n1 - n0) * P;
  float *dyc = scratch<float>(1, p.ocg * cols);
  gatherImages(p, dy, grp, n0, n1, dyc);
  const float *wg = w + grp * p.ocg * k;
  const int64_t chunkC = clamp(ceilDiv(kBatchedTaskMacs, p.ocg * T * cols),
                               ceilDiv(kMinTaskRows, T), p.cg);
  parallelFor(ceilDiv(p.cg, chunkC), 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t c0 = t * chunkC;
      const int64_t c1 = c0 + chunkC < p.cg ? c0 + chunkC : p.cg;
      float *buf = scratch<float>(0, (c1 - c0) * T * cols);
      gemmTile((c1 - c0) * T, cols, p.ocg, wg + c0 * T, k, true, dyc, cols,
               false, buf, cols, nullptr, false);
      for (int64_t n = n0; n < n1; ++n)
        imageGradInput(p, buf + (n - n0) * P, cols, c0, c1,
                       dx + (n * p.channels + grp * p.cg) * p.g.inSize());
    }
  });
}

/// Adds (or, with !accumulate, writes) the dw of group grp from images
/// [n0, n1): dy' x cols^T over all their columns at once, tasks owning
/// ranges of dw's columns (rows of the im2col matrix) sized by the problem
/// alone, each building the im2col rows it needs.
void gradWeightImages(const ConvGradProblem &p, const float *x, const float *dy,
                      float *dw, int64_t grp, int64_t n0, int64_t n1,
                      bool accumulate) {
  const WindowGeometry &g = p.g;
  const int64_t P = g.outSize(), k = p.cg * p.taps();
  const int64_t cols = (n1 - n0) * P;
  float *dyc = scratch<float>(1, p.ocg * cols);
  gatherImages(p, dy, grp, n0, n1, dyc);
  float *dwg = dw + grp * p.ocg * k;
  // Where each tap reads each output position's pixel in an input plane
  // (-1: padding), so that an im2col row of one image is a gather of its P
  // values (with so few positions, per output row copies cost more).
  const int64_t T = p.taps();
  int64_t *offsets = scratch<int64_t>(kTableSlot, T * P);
  tapOffsetTable(g, offsets);
  const int64_t chunkRows =
      ceilDiv(clamp(ceilDiv(kBatchedTaskMacs, p.ocg * cols), kMinTaskRows, k),
              16) *
      16;
  parallelFor(ceilDiv(k, chunkRows), 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t q0 = t * chunkRows;
      const int64_t q1 = q0 + chunkRows < k ? q0 + chunkRows : k;
      float *buf = scratch<float>(0, (q1 - q0) * cols);
      for (int64_t n = n0; n < n1; ++n) {
        const float *xg = x + (n * p.channels + grp * p.cg) * g.inSize();
        float *dst = buf + (n - n0) * P;
        for (int64_t r = q0; r < q1; ++r) {
          const float *plane = xg + r / T * g.inSize();
          const int64_t *at = offsets + r % T * P;
          float *row = dst + (r - q0) * cols;
          for (int64_t q = 0; q < P; ++q)
            row[q] = at[q] >= 0 ? plane[at[q]] : 0.0f;
        }
      }
      gemmTile(p.ocg, q1 - q0, cols, dyc, cols, false, buf, cols, true,
               dwg + q0, k, nullptr, accumulate);
    }
  });
}

} // namespace

extern "C" void weft_k_conv_grad_input(void *const *bufs, const int64_t *desc) {
  if (runBF16AsF32(bufs, desc, 1, weft_k_conv_grad_input))
    return;
  KernelArgs args("conv_grad_input", bufs, desc);
  args.expectTensors(3, 3);
  const TensorArg &dy = args.tensor(0), &w = args.tensor(1),
                  &dx = args.tensor(2);
  ConvGradProblem p = makeProblem(args, dx, dy, w);
  const float *pdy = dy.as<float>(), *pw = w.as<float>();
  float *pdx = dx.as<float>();
  if (dx.numel == 0)
    return;
  const WindowGeometry &g = p.g;
  if (dy.numel == 0 || p.ocg == 0) {
    std::memset(pdx, 0, static_cast<size_t>(dx.numel) * sizeof(float));
    return;
  }
  pw = dropDeadTaps(p, pw);
  if (gradInputIsConv(p))
    return gradInputAsConv(p, pdy, pw, pdx);
  const int64_t T = p.taps(), P = g.outSize();
  if (p.direct()) {
    const bool small = P <= kSmallPlane;
    int64_t *offsets = small ? scratch<int64_t>(kTableSlot, T * P) : nullptr;
    if (small)
      tapOffsetTable(g, offsets);
    parallelFor(p.batch * p.channels, grainFor(g.inSize() + p.ocg * T * P),
                [&](int64_t b, int64_t e) {
                  for (int64_t i = b; i < e; ++i)
                    if (small)
                      smallGradInputPlane(p, pdy, pw, pdx, offsets, i);
                    else
                      directGradInputPlane(p, pdy, pw, pdx, i);
                });
    return;
  }
  if (batchesImages(p)) {
    const int64_t chunk = batchedImages(p);
    for (int64_t grp = 0; grp < p.groups; ++grp)
      for (int64_t n0 = 0; n0 < p.batch; n0 += chunk)
        gradInputImages(p, pdy, pw, pdx, grp, n0,
                        n0 + chunk < p.batch ? n0 + chunk : p.batch);
    return;
  }
  const int64_t macsPerChannel = p.ocg * T * P;
  int64_t chunkC = ceilDiv(kTaskMacs, macsPerChannel);
  chunkC = clamp(chunkC, ceilDiv(kMinTaskRows, T), p.cg);
  const int64_t chunks = ceilDiv(p.cg, chunkC);
  const int64_t tasks = p.batch * p.groups * chunks;
  parallelFor(tasks, grainFor(macsPerChannel * chunkC / 8),
              [&](int64_t b, int64_t e) {
                for (int64_t t = b; t < e; ++t) {
                  const int64_t ch = t % chunks, item = t / chunks;
                  const int64_t c0 = ch * chunkC;
                  const int64_t c1 = c0 + chunkC < p.cg ? c0 + chunkC : p.cg;
                  gemmGradInputTask(p, pdy, pw, pdx, item / p.groups,
                                    item % p.groups, c0, c1);
                }
              });
}

extern "C" void weft_k_conv_grad_weight(void *const *bufs,
                                        const int64_t *desc) {
  if (runBF16AsF32(bufs, desc, 1, weft_k_conv_grad_weight))
    return;
  KernelArgs args("conv_grad_weight", bufs, desc);
  args.expectTensors(3, 3);
  const TensorArg &x = args.tensor(0), &dy = args.tensor(1),
                  &dw = args.tensor(2);
  ConvGradProblem p = makeProblem(args, x, dy, dw);
  const float *px = x.as<float>(), *pdy = dy.as<float>();
  float *pdw = dw.as<float>();
  if (dw.numel == 0)
    return;
  if (dy.numel == 0 || x.numel == 0) {
    std::memset(pdw, 0, static_cast<size_t>(dw.numel) * sizeof(float));
    return;
  }
  // With dead taps (ConvTaps.h), the cut conv's dw is computed into
  // `target` and spread out over the full kernel at the end.
  LiveTaps live;
  const bool cut = findDeadTaps(p, live);
  const int64_t pairs = p.outChannels * p.cg;
  float *target = pdw;
  int64_t targetNumel = dw.numel;
  if (cut) {
    static_cast<ConvShape &>(p) = live.shape;
    targetNumel = pairs * p.taps();
    target = scratch<float>(kOperandSlot, targetNumel);
  }
  if (p.direct() && p.g.outSize() <= kSmallPlane) {
    int64_t *offsets = scratch<int64_t>(kTableSlot, p.taps() * p.g.outSize());
    tapOffsetTable(p.g, offsets);
    parallelFor(p.outChannels, grainFor(p.batch * p.g.outSize() * p.taps()),
                [&](int64_t b, int64_t e) {
                  for (int64_t oc = b; oc < e; ++oc)
                    smallGradWeightChannel(p, px, pdy, target, offsets, oc);
                });
  } else if (p.direct()) {
    const bool padded = paddedPlanes(p);
    parallelFor(p.outChannels, grainFor(p.batch * p.g.outSize() * p.taps()),
                [&](int64_t b, int64_t e) {
                  float *buf = scratch<float>(
                      0, padded ? paddedPlaneFloats(p) : p.taps() * p.g.out[2]);
                  for (int64_t oc = b; oc < e; ++oc)
                    if (padded)
                      paddedGradWeightChannel(p, px, pdy, target, oc, buf);
                    else
                      directGradWeightChannel(p, px, pdy, target, oc, buf);
                });
  } else if (batchesImages(p)) {
    // Image chunks one after another, so dw sums them in a fixed order.
    const int64_t chunk = batchedImages(p);
    for (int64_t grp = 0; grp < p.groups; ++grp)
      for (int64_t n0 = 0; n0 < p.batch; n0 += chunk)
        gradWeightImages(p, px, pdy, target, grp, n0,
                         n0 + chunk < p.batch ? n0 + chunk : p.batch, n0 > 0);
  } else {
    gemmGradWeight(p, px, pdy, target, targetNumel);
  }
  if (cut)
    parallelFor(
        pairs,
        grainFor(live.fullKernel[0] * live.fullKernel[1] * live.fullKernel[2]),
        [&](int64_t q0, int64_t q1) {
          uncutWeights(live, q0, q1, target, pdw);
        });
}
