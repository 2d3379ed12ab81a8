//===- Conv.cpp - conv kernel ---------------------------------------------===//
//
// y[n, g*OCg + o] = sum over (c, taps) w[g*OCg + o, c, taps] x[n, g*Cg + c, ..]
// for 1-D to 3-D convolutions with groups, strides, pads and dilations.
//
// General convs lower each (image, group) to one sgemm,
//   y_g[OCg, P] = w_g[OCg, Cg*T] x cols[Cg*T, P],
// where cols is the im2col matrix of the group's input (T taps, P output
// positions), built in column blocks of whole output rows to bound its size.
// 1x1 stride-1 unpadded convs use the input itself as cols. Depthwise convs
// (one input channel per group) are computed directly, one output plane per
// task, since their gemms would be degenerate.
//
//===----------------------------------------------------------------------===//

#include "ConvGeometry.h"
#include "Parallel.h"
#include "RowOps.h"
#include "Scratch.h"

#include <cblas.h>
#include <cstring>

using namespace weft;
using namespace weft::cpu;

namespace {

/// Upper bound on the floats of one im2col block.
constexpr int64_t kColsBudget = int64_t(4) << 20;
/// Up to this many multiply-adds a gemm is too small for OpenBLAS's own
/// threading to pay (its per-call synchronization costs tens of
/// microseconds), so independent gemms of this size run one per thread.
constexpr int64_t kSmallGemm = int64_t(1) << 22;

struct ConvProblem {
  WindowGeometry g;
  int64_t batch, channels, outChannels, groups;
  int64_t cg, ocg; // channels per group, in and out
  const float *x, *w, *bias;
  float *y;

  int64_t taps() const { return g.kernelSize(); }
  bool pointwise() const {
    for (int d = 0; d < WindowGeometry::kDims; ++d)
      if (g.kernel[d] != 1 || g.stride[d] != 1 || g.padBegin[d] != 0 ||
          g.in[d] != g.out[d])
        return false;
    return true;
  }
};

/// Fills rows [rowBegin, rowEnd) of the im2col block covering output rows
/// [outRowBegin, outRowEnd) (an output row is one (od, oh) pair holding
/// out[2] positions). Row r is (channel, kd, kh, kw) of the group's input
/// `xg`; the block has `ld` columns.
void im2colRows(const WindowGeometry &g, const float *xg, int64_t rowBegin,
                int64_t rowEnd, int64_t outRowBegin, int64_t outRowEnd,
                float *cols, int64_t ld) {
  const int64_t kd = g.kernel[0], kh = g.kernel[1], kw = g.kernel[2];
  const int64_t ow = g.out[2];
  const int64_t inW = g.in[2], inHW = g.in[1] * g.in[2];
  for (int64_t r = rowBegin; r < rowEnd; ++r) {
    int64_t tw = r % kw;
    int64_t th = (r / kw) % kh;
    int64_t td = (r / (kw * kh)) % kd;
    int64_t c = r / (kw * kh * kd);
    const float *xc = xg + c * g.inSize();
    float *dst = cols + (r - rowBegin) * ld;
    int64_t wLo, wHi;
    g.validOutputs(2, tw, wLo, wHi);
    const int64_t wOffset = tw * g.dilation[2] - g.padBegin[2];
    const int64_t sw = g.stride[2];
    for (int64_t orow = outRowBegin; orow < outRowEnd; ++orow, dst += ow) {
      int64_t oh = orow % g.out[1], od = orow / g.out[1];
      int64_t id = od * g.stride[0] - g.padBegin[0] + td * g.dilation[0];
      int64_t ih = oh * g.stride[1] - g.padBegin[1] + th * g.dilation[1];
      if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || wLo >= wHi) {
        std::memset(dst, 0, static_cast<size_t>(ow) * sizeof(float));
        continue;
      }
      // First input element read: that of output wLo (>= 0 by
      // construction of wLo).
      const float *src = xc + id * inHW + ih * inW + wLo * sw + wOffset;
      for (int64_t o = 0; o < wLo; ++o)
        dst[o] = 0.0f;
      if (sw == 1) {
        std::memcpy(dst + wLo, src,
                    static_cast<size_t>(wHi - wLo) * sizeof(float));
      } else {
        for (int64_t o = wLo; o < wHi; ++o)
          dst[o] = src[(o - wLo) * sw];
      }
      for (int64_t o = wHi; o < ow; ++o)
        dst[o] = 0.0f;
    }
  }
}

void addBias(float *y, const float *bias, int64_t channels, int64_t size) {
  for (int64_t c = 0; c < channels; ++c) {
    float b = bias[c];
    float *row = y + c * size;
    for (int64_t i = 0; i < size; ++i)
      row[i] += b;
  }
}

/// One (image, group) of a general conv. `parallelIm2col` spreads the im2col
/// over the pool (used when items run one at a time).
void convItem(const ConvProblem &p, int64_t n, int64_t grp,
              bool parallelIm2col) {
  const WindowGeometry &g = p.g;
  const int64_t outSize = g.outSize();
  const int64_t k = p.cg * p.taps();
  const float *xg = p.x + (n * p.channels + grp * p.cg) * g.inSize();
  const float *wg = p.w + grp * p.ocg * k;
  float *yg = p.y + (n * p.outChannels + grp * p.ocg) * outSize;
  if (outSize == 0 || p.ocg == 0)
    return;
  if (k == 0) {
    std::memset(yg, 0, static_cast<size_t>(p.ocg * outSize) * sizeof(float));
  } else if (p.pointwise()) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)p.ocg,
                (int)outSize, (int)k, 1.0f, wg, (int)k, xg, (int)outSize, 0.0f,
                yg, (int)outSize);
  } else {
    const int64_t rowLen = g.out[2];
    const int64_t outRows = g.out[0] * g.out[1];
    int64_t blockRows = kColsBudget / (k * rowLen);
    blockRows = blockRows < 1 ? 1 : blockRows > outRows ? outRows : blockRows;
    float *cols = scratch<float>(0, k * blockRows * rowLen);
    for (int64_t r0 = 0; r0 < outRows; r0 += blockRows) {
      int64_t r1 = r0 + blockRows < outRows ? r0 + blockRows : outRows;
      int64_t ld = (r1 - r0) * rowLen;
      auto fill = [&](int64_t b, int64_t e) {
        im2colRows(g, xg, b, e, r0, r1, cols + b * ld, ld);
      };
      if (parallelIm2col)
        parallelFor(k, grainFor(ld), fill);
      else
        fill(0, k);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)p.ocg,
                  (int)ld, (int)k, 1.0f, wg, (int)k, cols, (int)ld, 0.0f,
                  yg + r0 * rowLen, (int)outSize);
    }
  }
  if (p.bias)
    addBias(yg, p.bias + grp * p.ocg, p.ocg, outSize);
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

extern "C" void weft_k_conv(void *const *bufs, const int64_t *desc) {
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
  if (x.rank < 3 || w.rank != x.rank || y.rank != x.rank)
    args.invalid("expected x, w and y of equal rank >= 3");
  const int s = x.rank - 2;
  const int64_t *a = args.attrArray(2, 4 * s);
  ConvProblem p;
  p.g = makeWindowGeometry(args, x, y, w.dims + 2, a, a + s, a + 3 * s);
  p.batch = x.dims[0];
  p.channels = x.dims[1];
  p.outChannels = y.dims[1];
  p.groups = args.attr(1);
  if (p.groups < 1 || p.channels % p.groups != 0 ||
      p.outChannels % p.groups != 0 || w.dims[0] != p.outChannels ||
      w.dims[1] * p.groups != p.channels || y.dims[0] != p.batch)
    args.invalid("inconsistent channel, group or weight dims");
  p.cg = p.channels / p.groups;
  p.ocg = p.outChannels / p.groups;
  p.x = x.as<float>();
  p.w = w.as<float>();
  p.bias = hasBias ? args.tensor(2).as<float>() : nullptr;
  p.y = y.as<float>();
  if (y.numel == 0)
    return;

  const int threads = numThreads();
  if (p.cg == 1 && p.g.kernel[0] == 1 && p.g.in[0] == 1 && p.g.out[0] == 1 &&
      p.g.padBegin[0] == 0) {
    int64_t planes = p.batch * p.outChannels;
    parallelFor(planes, grainFor(p.g.outSize() * p.taps()),
                [&](int64_t begin, int64_t end) {
                  for (int64_t i = begin; i < end; ++i)
                    depthwisePlane(p, i);
                });
    return;
  }

  const int64_t items = p.batch * p.groups;
  const int64_t macs = p.ocg * p.g.outSize() * p.cg * p.taps();
  if (items > 1 && (items >= threads || macs <= kSmallGemm)) {
    BlasSingleThreadScope serialBlas;
    parallelFor(items, grainFor(macs / 8), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        convItem(p, i / p.groups, i % p.groups, false);
    });
  } else {
    for (int64_t i = 0; i < items; ++i)
      convItem(p, i / p.groups, i % p.groups, true);
  }
}
